"""A host program that carves every buffer out of one allocation with bo(parent, size, offset),
then runs them as a runlist.

Usage: subbuffer_host.py XCLBIN DEPTH. Exits 0 when the runlist completes.
"""

import sys

import numpy as np
import pyxrt as xrt

xclbin_path, depth = sys.argv[1], int(sys.argv[2])
device = xrt.device(0)
xclbin = xrt.xclbin(xclbin_path)
context = xrt.hw_context(device, device.register_xclbin(xclbin))
kernel = xrt.kernel(context, "MLIR_AIE")

pool = xrt.bo(device, 64 * 1024, xrt.bo.host_only, kernel.group_id(3))
instr = xrt.bo(pool, 32, 0)
instr.write(np.array([0x06040100, 0x00000108, 1, 0x14, 5], dtype=np.uint32), 0)
instr.sync(xrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)
data = [xrt.bo(pool, 4096, 4096 * (i + 1)) for i in range(5)]

runlist = xrt.runlist(context)
runs = []
for _ in range(depth):
    run = xrt.run(kernel)
    for index, value in enumerate([3, instr, 5, *data]):
        run.set_arg(index, value)
    runlist.add(run)
    runs.append(run)
runlist.execute()
runlist.wait()
print(f"runlist of {depth} over sub-buffers completed; pool address {pool.address():#x}, "
      f"first data buffer at +{data[0].address() - pool.address()}")
