"""A host program in the idiom of XRT's own Python tests (tests/python/22_verify), moved to
an NPU: the uuid comes back from register_xclbin, the kernel is opened on device and uuid
with shared access, buffers are bytearrays written, mapped and synced by size and offset.

Usage: xrt_style_host.py XCLBIN. Exits 0 when the run completes and the output reads back.
"""

import sys
import warnings

import pyxrt

warnings.simplefilter("ignore", DeprecationWarning)     # kernel(device, uuid, ...) from 2.23

d = pyxrt.device(0)
xbin = pyxrt.xclbin(sys.argv[1])
uuid = d.register_xclbin(xbin)
name = [k for k in xbin.get_kernels() if k.get_name().startswith("MLIR_AIE")][0].get_name()
kernel = pyxrt.kernel(d, uuid, name, pyxrt.kernel.shared)

instructions = bytearray((0x06040100).to_bytes(4, "little") + (0x00000108).to_bytes(4, "little")
                         + (1).to_bytes(4, "little") + (0x14).to_bytes(4, "little")
                         + (5).to_bytes(4, "little"))
bo_instr = pyxrt.bo(d, len(instructions), pyxrt.bo.cacheable, kernel.group_id(1))
bo_instr.write(instructions, 0)
bo_instr.sync(pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE, len(instructions), 0)
data = [pyxrt.bo(d, 1024, pyxrt.bo.host_only, kernel.group_id(3 + i)) for i in range(5)]
for b in data:
    b.write(bytearray(1024), 0)
    b.sync(pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE, 1024, 0)
view = data[0].map()
run = kernel(3, bo_instr, len(instructions) // 4, *data)
state = run.wait()
data[0].sync(pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE, 1024, 0)
print(f"uuid {uuid.to_string()}; run {state.name}; mapped {len(view)} bytes")
sys.exit(0 if state == pyxrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED else 1)
