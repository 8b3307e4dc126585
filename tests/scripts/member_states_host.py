"""A host program that, after a runlist fails, reads every member run's state and finds the
failing run as XRT leaves it: runs before it read NEW, it reads the chain's state, later runs
read ABORT (xrt_kernel.cpp runlist_impl::wait).

Usage: member_states_host.py XCLBIN DEPTH. Prints the states and the failing run; exits 1 on
failure.
"""

import itertools
import sys

import pyxrt

xclbin_path, depth = sys.argv[1], int(sys.argv[2])
device = pyxrt.device(0)
context = pyxrt.hw_context(device, device.register_xclbin(pyxrt.xclbin(xclbin_path)))
kernel = pyxrt.kernel(context, "MLIR_AIE")
instr = pyxrt.bo(device, 20, pyxrt.bo.cacheable, kernel.group_id(1))
instr.write(bytes.fromhex("00010406 08010000 01000000 14000000 05000000".replace(" ", "")), 0)
instr.sync(pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)
bos = [pyxrt.bo(device, 64, pyxrt.bo.host_only, kernel.group_id(3 + i)) for i in range(5)]
runlist = pyxrt.runlist(context)
runs = [pyxrt.run(kernel) for _ in range(depth)]
for run in runs:
    for index, value in enumerate([3, instr, 5, *bos]):
        run.set_arg(index, value)
    runlist.add(run)
runlist.execute()
try:
    runlist.wait()
    failed = None
except RuntimeError as error:
    failed = str(error).splitlines()[0]
names = [run.state().name.replace("ERT_CMD_STATE_", "") for run in runs]
print("states: " + " ".join(f"{name}x{len(list(group))}"
                            for name, group in itertools.groupby(names)))
if failed is None:
    print("completed")
    sys.exit(0)
first = next(i for i, name in enumerate(names) if name not in ("NEW", "COMPLETED"))
print(f"message: {failed}")
print(f"failing run {first} ({names[first]})")
sys.exit(1)
