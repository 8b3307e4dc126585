"""A host program for the real pyxrt that submits one runlist and waits on it: for what
reaches a program waiting in the driver (a Ctrl-C, a device that goes away).

Usage: waiting_host.py XCLBIN DEPTH. Prints `waiting` once the runlist is submitted, then
how the wait ended.
"""

import sys

import numpy as np
import pyxrt

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
runlist = pyxrt.runlist(context)
runs = []
for _ in range(int(sys.argv[2])):
    run = pyxrt.run(kernel)
    for index, value in enumerate([3, instr, len(words), *bos]):
        run.set_arg(index, value)
    runlist.add(run)
    runs.append(run)
runlist.execute()
print("waiting", flush=True)
try:
    runlist.wait()
    print("completed", flush=True)
except RuntimeError as error:
    print(f"failed: {error}", flush=True)
