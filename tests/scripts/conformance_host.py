"""A host program written for the real pyxrt (mlir-aie's and IRON's idiom: xclbin,
hw_context, kernel, instruction and data buffers, runs, runlists) that prints, as one JSON
object, what the binding and XRT answered: a single run's state, each runlist's outcome
(the whole message text, every member run's state; a failed runlist's again, executed
once more as it is), what `runlist.wait(timeout)` raises, each argument's memory group,
and the binding's surface (the module's names, each class's methods).

Usage: conformance_host.py XCLBIN DEPTH [DEPTH ...]. Run it with the real pyxrt under
`runlist-harness emulate` and with the simulated one under `runlist-harness sim exec`: the
same profile must print the same object (tests/test_xrt_conformance.py).
"""

import datetime
import itertools
import json
import sys

import numpy as np
import pyxrt

xclbin_path, depths = sys.argv[1], [int(d) for d in sys.argv[2:]]
CLASSES = ("device", "xclbin", "hw_context", "kernel", "run", "runlist", "bo", "uuid",
           "ert_cmd_state")


def public(obj) -> list:
    return sorted(name for name in dir(obj) if not name.startswith("_"))


def grouped(names: list) -> list:
    return [[name, len(list(group))] for name, group in itertools.groupby(names)]


device = pyxrt.device(0)
xclbin = pyxrt.xclbin(xclbin_path)
device.register_xclbin(xclbin)
context = pyxrt.hw_context(device, xclbin.get_uuid())
kernel = pyxrt.kernel(context, "MLIR_AIE")
words = np.array([0x06040100, 0x00000108, 0x00000001, 0x00000014, 0x00000005],
                 dtype=np.uint32)
instr = pyxrt.bo(device, words.nbytes, pyxrt.bo.cacheable, kernel.group_id(1))
instr.write(words, 0)
instr.sync(pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)
bos = [pyxrt.bo(device, 4096, pyxrt.bo.host_only, kernel.group_id(3 + i)) for i in range(5)]

out = {"surface": {"module": public(pyxrt),
                   **{name: public(getattr(pyxrt, name)) for name in CLASSES}}}
single = kernel(3, instr, len(words), *bos)
out["single"] = single.wait().name
out["runlists"] = []
for depth in depths:
    runlist = pyxrt.runlist(context)
    runs = []
    for _ in range(depth):
        run = pyxrt.run(kernel)
        for index, value in enumerate([3, instr, len(words), *bos]):
            run.set_arg(index, value)
        runlist.add(run)
        runs.append(run)
    outcome = {"depth": depth}
    for attempt in ("first", "again"):
        # a failed runlist is executed once more, as it is: XRT resets the states, never
        # the payloads the driver wrote over
        runlist.execute()
        try:
            runlist.wait()
            message = None
        except RuntimeError as error:
            message = str(error)
        outcome[attempt] = {"message": message,
                            "states": grouped([r.state().name for r in runs])}
        if message is None:
            break
    out["runlists"].append(outcome)
try:
    pyxrt.runlist(context).wait(datetime.timedelta(milliseconds=10))
    out["wait_timeout"] = None
except Exception as error:  # noqa: BLE001 - what the binding raises is the observation
    out["wait_timeout"] = [type(error).__name__, str(error).splitlines()[0]]
# an argument's memory group: its bank, and the context's slot above it (a second context
# on the same xclbin, made last, has the next slot)
second = pyxrt.kernel(pyxrt.hw_context(device, xclbin.get_uuid()), "MLIR_AIE")
out["group_ids"] = [[k.group_id(i) for i in range(8)] for k in (kernel, second)]
print(json.dumps(out))
