"""Where the simulated pyxrt calls XRT's capture (`harness.sim.capture_writer`).

The places XRT calls it (`XRT_REPLAY_CAPTURE`, Xilinx/XRT 49612fa3): `run_impl_debug`
(`set_arg_value`, `start`, `wait`, `wait_throw_on_error`) and `runlist_impl_debug` (`add`,
`submit`, `wait_throw_on_error`) in `api/xrt_kernel.cpp`, `bo_impl::sync` in
`api/xrt_bo.cpp`, the `elf` constructors in `api/xrt_elf.cpp`; each after the call it
follows returned (a wait that throws is not recorded). XRT makes its runs and runlists of
those capturing kinds only when `Runtime.capture_frames` is set (`alloc_run`,
`alloc_runlist`); here the binding's methods are wrapped only then (`install`), so its
own code, and its speed, are untouched otherwise.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.sim.capture_writer import Recorder, recorder
from harness.sim.releases import CAPTURE

_installed = False


def install() -> None:
    """Wrap the binding's methods that XRT's capture follows (once per process)."""
    global _installed
    if _installed:
        return
    _installed = True
    from harness.sim import binding, runs

    def current() -> Recorder | None:
        return recorder(lambda: binding.release().has(CAPTURE))

    def after(cls: type, name: str, record: Callable[..., None]) -> None:
        original = getattr(cls, name)

        @functools.wraps(original)
        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(self, *args, **kwargs)
            capture = current()
            if capture is not None:
                record(capture, self, *args, **kwargs)
            return result
        setattr(cls, name, wrapped)

    def set_arg(capture: Recorder, r: Any, index: Any = None, value: Any = None) -> None:
        capture.set_arg(r, int(index), value, isinstance(value, binding.bo))

    def add(capture: Recorder, rl: Any, r: Any = None) -> None:
        if isinstance(r, runs.run):      # else the binding's dispatch called add again
            capture.add(rl, r)

    def execute(capture: Recorder, rl: Any, *args: Any) -> None:
        if rl._runs:                     # an empty runlist is never submitted
            capture.start(capture.runlists.get(rl))

    def sync(capture: Recorder, b: Any, direction: Any, *args: Any) -> None:
        if direction.value == 0:         # only XCL_BO_SYNC_BO_TO_DEVICE
            capture.sync(b)

    def elf_from_file(capture: Recorder, e: Any, path: str) -> None:
        capture.elfs[e] = Path(path).read_bytes()

    def elf_from_pointer(capture: Recorder, e: Any, data: Any, size: int) -> None:
        capture.elfs[e] = binding._capsule_bytes(data, size)

    after(runs.run, "set_arg", set_arg)
    after(runs.run, "start", lambda c, r, *a: c.start(c.runs.get(r)))
    after(runs.run, "wait", lambda c, r, *a, **k: c.wait(c.runs.get(r)))
    after(runs.run, "wait2", lambda c, r, *a, **k: c.wait(c.runs.get(r)))
    after(runs.runlist, "add", add)
    after(runs.runlist, "execute", execute)
    after(runs.runlist, "wait", lambda c, rl, *a, **k: c.wait(c.runlists.get(rl)))
    after(binding.bo, "_sync", sync)
    after(binding.elf, "_read", elf_from_file)
    after(binding.elf, "_from_pointer", elf_from_pointer)
