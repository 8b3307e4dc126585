"""A host program that carves its buffers out of two allocations with bo(parent, size,
offset), one in each memory bank the kernel's arguments are connected to (the instruction
buffer's and the data buffers'), then runs them as a runlist. With `--one-pool` it carves
them all out of the data pool, which XRT refuses for the instruction buffer: a buffer in
a bank its argument is not connected to is copied into one that is, which the NPU cannot
do (`No host side buffer in destination buffer`).

Usage: subbuffer_host.py XCLBIN DEPTH [--one-pool]. Exits 0 when the runlist completes.
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
if "--one-pool" in sys.argv:
    instr = xrt.bo(pool, 32, 0)
else:
    instr = xrt.bo(xrt.bo(device, 4096, xrt.bo.cacheable, kernel.group_id(1)), 32, 64)
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
