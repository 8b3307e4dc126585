"""A host program for the real pyxrt that runs one command, says `ready`, and waits for
its user: on SIGINT it leaves normally (as a program handling Ctrl-C does), or, with
`ignore`, it ignores SIGINT and only SIGTERM or SIGKILL end it.

Usage: ctrl_c_host.py XCLBIN [ignore]
"""

import signal
import sys
import time

import numpy as np
import pyxrt

if sys.argv[2:] == ["ignore"]:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
device = pyxrt.device(0)
xclbin = pyxrt.xclbin(sys.argv[1])
device.register_xclbin(xclbin)
context = pyxrt.hw_context(device, xclbin.get_uuid())
kernel = pyxrt.kernel(context, "MLIR_AIE")
words = np.array([0x06040100, 0x00000108, 1, 0x14, 5], dtype=np.uint32)
instr = pyxrt.bo(device, words.nbytes, pyxrt.bo.cacheable, kernel.group_id(1))
instr.write(words, 0)
instr.sync(pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)
bos = [pyxrt.bo(device, 4096, pyxrt.bo.host_only, kernel.group_id(3 + i)) for i in range(5)]
kernel(3, instr, len(words), *bos).wait()
print("ready", flush=True)
try:
    time.sleep(120)
except KeyboardInterrupt:
    print("interrupted: leaving normally", flush=True)
    sys.exit(0)
