"""An IRON-style host program for the real pyxrt that polls `run.state()` instead of
waiting (with or without a sleep between reads), then runs a runlist.

Usage: polling_host.py XCLBIN DEPTH [SLEEP_S]. Prints how many reads the single run took
to complete; exits 1 if the runlist fails.
"""

import sys
import time

import numpy as np
import pyxrt as xrt

xclbin_path, depth = sys.argv[1], int(sys.argv[2])
pause_s = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0

device = xrt.device(0)
xclbin = xrt.xclbin(xclbin_path)
device.register_xclbin(xclbin)
context = xrt.hw_context(device, xclbin.get_uuid())
kernel = xrt.kernel(context, "MLIR_AIE")
instr_v = np.array([0x06040100, 0x00000108, 0x00000001, 0x00000014, 0x00000005],
                   dtype=np.uint32)
bo_instr = xrt.bo(device, len(instr_v) * 4, xrt.bo.cacheable, kernel.group_id(1))
bo_instr.write(instr_v, 0)
bo_instr.sync(xrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)
bos = [xrt.bo(device, 4096, xrt.bo.host_only, kernel.group_id(3 + i)) for i in range(5)]

done = (xrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED, xrt.ert_cmd_state.ERT_CMD_STATE_ERROR,
        xrt.ert_cmd_state.ERT_CMD_STATE_ABORT, xrt.ert_cmd_state.ERT_CMD_STATE_TIMEOUT)
for attempt in range(3):
    h = kernel(3, bo_instr, len(instr_v), *bos)
    reads = 1
    state = h.state()
    give_up = time.monotonic() + 5
    while state not in done and time.monotonic() < give_up:
        if pause_s:
            time.sleep(pause_s)
        state = h.state()
        reads += 1
    print(f"polled run {attempt}: {state} after {'some' if reads > 1 else 'one'} read(s)",
          flush=True)
    if state != xrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED:
        sys.exit(1)

runlist = xrt.runlist(context)
for _ in range(depth):
    run = xrt.run(kernel)
    for index, value in enumerate([3, bo_instr, len(instr_v), *bos]):
        run.set_arg(index, value)
    runlist.add(run)
runlist.execute()
try:
    runlist.wait()
except RuntimeError as e:
    print(f"runlist of {depth} failed: {str(e).splitlines()[0]}")
    sys.exit(1)
print(f"runlist of {depth} completed")
