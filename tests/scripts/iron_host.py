"""An IRON-style host program, written for the real pyxrt (mlir-aie's aie.utils.xrt idiom).

Usage: iron_host.py XCLBIN DEPTH. Prints one line per step; exits 1 if the runlist fails.
"""

import sys

import numpy as np
import pyxrt as xrt

xclbin_path, depth = sys.argv[1], int(sys.argv[2])

device = xrt.device(0)
xclbin = xrt.xclbin(xclbin_path)
kernels = xclbin.get_kernels()
xkernel = [k for k in kernels if k.get_name().startswith("MLIR_AIE")][0]
device.register_xclbin(xclbin)
context = xrt.hw_context(device, xclbin.get_uuid())
kernel = xrt.kernel(context, xkernel.get_name())
print(f"kernel {xkernel.get_name()} with {xkernel.get_num_args()} args")

# The one-NOOP transaction for an 8-column AIE2P partition, as 32-bit words.
instr_v = np.array([0x06040100, 0x00000108, 0x00000001, 0x00000014, 0x00000005],
                   dtype=np.uint32)
bo_instr = xrt.bo(device, len(instr_v) * 4, xrt.bo.cacheable, kernel.group_id(1))
bo_instr.write(instr_v, 0)
bo_instr.sync(xrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)
bos = [xrt.bo(device, 4096, xrt.bo.host_only, kernel.group_id(3 + i)) for i in range(5)]
for b in bos:
    b.write(np.zeros(4096, dtype=np.uint8), 0)
    b.sync(xrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)

opcode = 3
h = kernel(opcode, bo_instr, len(instr_v), *bos)
r = h.wait()
if r != xrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED:
    print(f"single run failed: {r}")
    sys.exit(1)
print("single run completed")

runlist = xrt.runlist(context)
for _ in range(depth):
    run = xrt.run(kernel)
    run.set_arg(0, opcode)
    run.set_arg(1, bo_instr)
    run.set_arg(2, len(instr_v))
    for i, b in enumerate(bos):
        run.set_arg(3 + i, b)
    runlist.add(run)
runlist.execute()
try:
    runlist.wait()
except RuntimeError as e:
    print(f"runlist of {depth} failed: {str(e).splitlines()[0]}")
    sys.exit(1)
bos[0].sync(xrt.xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE)
out = bos[0].read(16, 0)
print(f"runlist of {depth} completed; read back {len(out)} bytes")
