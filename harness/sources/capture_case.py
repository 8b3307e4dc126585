"""A captured frame as a case: its runs, in order, are what plans cut (`run --frame F
--plan 21+21`); every context the application made is made again, and each buffer holds
the data it held when the frame started."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from harness.model.errors import PlanError
from harness.model.plan import Plan, make_plan
from harness.model.results import ELF_FLOW, FULL_ELF, INSTR_BO, BufferSpec, numeric_cfg
from harness.sources.capture import REPLAY, Capture, CaptureError, Run, load_capture
from harness.sources.case import DEFAULT_TRIALS, NAME, Case, CaseKind, Command, FieldChecker


def capture_case(capture: Capture, frame_name: str | None, *, name: str, description: str,
                 file: str, sha256: str, trials: int = DEFAULT_TRIALS,
                 deadline_s: float | None = None,
                 plan_specs: dict[str, str] | None = None) -> Case:
    """Frame `frame_name` of `capture` (None: the deepest runlist) as a case: every
    context the application made, the frame's runs in order, the data each buffer held
    when it started."""
    frame = capture.frame(frame_name)
    context = capture.context_of(frame)
    # Runs alike (same kernel, same arguments) share a template; each is still its own
    # run object when the runlist is built, as in the application.
    members = [capture.runs[r] for r in frame.runs]
    keys: dict[tuple, int] = {}
    templates: list[Run] = []
    order = []
    for run in members:
        key = (run.kernel, run.args)
        if key not in keys:
            keys[key] = len(templates)
            templates.append(run)
        order.append(keys[key])
    commands = tuple(Command(capture.kernels[run.kernel].instance, "nop", (),
                             elf=capture.kernels[run.kernel].ctrlcode,
                             args=_as_c_ints(capture, run))
                     for run in templates)
    data = capture.data_for(frame)
    used = {value for run in templates for _, kind, value in run.args if kind == "bo"}
    buffers = {bo: BufferSpec(capture.buffers[bo].size, data.get(bo),
                              capture.buffers[bo].flags, capture.buffers[bo].memgrp)
               for bo in sorted(used)}
    n = frame.depth
    specs = plan_specs or {"captured": str(n)}
    plans: list[Plan] = []
    for plan_name, spec in specs.items():
        plans.append(make_plan(plan_name, spec, n))
    flow = FULL_ELF if context in capture.programs else ELF_FLOW if all(
        c.elf for c in commands) else INSTR_BO
    return Case(name=name, description=description, source=f"xrt-capture {capture.folder}",
                pack="capture", xclbins=dict(capture.hwctxs), layers=n,
                runlist_context=context, per_layer=commands, plans=tuple(plans), expect={},
                trials=trials, deadline_s=deadline_s, file=file, sha256=sha256, flow=flow,
                buffers=buffers, order=tuple(order), kind=CaseKind.CAPTURE, frame=frame.name,
                frames=tuple(f.name for f in capture.frames), capture=str(capture.folder),
                programs=dict(capture.programs), notes=_setting_notes(capture),
                context_cfg={k: dict(v) for k, v in capture.cfgs.items()},
                ini=dict(capture.ini))


def _setting_notes(capture: Capture) -> tuple[str, ...]:
    notes = []
    for context, cfg in capture.cfgs.items():
        passed = numeric_cfg(cfg)
        left = sorted(set(cfg) - set(passed))
        notes.append(f"context {context} was made with cfg "
                     + ", ".join(f"{k}={v}" for k, v in sorted(cfg.items()))
                     + (" (passed to pyxrt's hw_context as cfg_param, from XRT 2.23's "
                        "binding)" if passed else "")
                     + (f"; {', '.join(left)} not: pyxrt's cfg_param takes numbers only"
                        if left else ""))
    if capture.ini:
        notes.append("the application ran with the XRT settings " + ", ".join(
            f"{k}={v}" for k, v in sorted(capture.ini.items())) + " (replay.json ini; "
            "xrt-runner --replay sets them): the harness runs with its own process's, so "
            "set them in xrt.ini or in its environment (XRT reads each setting from a "
            "variable of its name before xrt.ini, config_reader.cpp) to match")
    return tuple(notes)


def _as_c_ints(capture: Capture, run: Run) -> tuple[tuple[int, str, Any], ...]:
    """A run's arguments as pyxrt can set them. The capture records constants as uint64;
    pyxrt's run.set_arg takes a C int, so a value of 32 bits is passed as the C int with
    the same bits (what XRT's set_arg copies), and a wider one cannot be set from Python
    at all (XRT's own `xrt-runner --replay` can)."""
    out = []
    for index, kind, value in run.args:
        if kind == "int" and value >= 2**31:
            if value >= 2**32:
                raise CaptureError(f"{capture.folder / REPLAY}: {run.name} sets argument "
                                   f"{index} to the 64-bit constant 0x{value:x}; pyxrt's "
                                   "run.set_arg takes a C int, so the harness cannot set it "
                                   "(replay this frame with xrt-runner --replay)")
            value -= 2**32
        out.append((index, kind, value))
    return tuple(out)


def captured_commands(case: Case) -> dict[str, Any]:
    """What a report records of a captured frame beside the case: the capture, the frame,
    its runs, replay.json's digest, and each buffer restored from the capture (the data it
    held when the frame started)."""
    capture = load_capture(case.capture or "")
    restored = [{"buffer": name, "size": spec.size, "file": Path(spec.data).name}
                for name, spec in case.buffers.items() if spec.data]
    return {"capture": case.capture, "frame": case.frame,
            "captured": {"folder": case.capture, "frame": case.frame, "runs": case.layers,
                         "frames": len(case.frames), "replay_sha256": capture.sha256,
                         "buffers": len(case.buffers), "restored": restored,
                         "written_by": capture.origin.stack,
                         **({"written_under": capture.origin.profile}
                            if capture.origin.profile else {})}}


def frame_case(case: Case, frame: str) -> Case:
    """The same capture case on another frame (a sweep over frames, a plan's own frame)."""
    if case.frame == frame:
        return case
    return capture_case(load_capture(case.capture or ""), frame, name=case.name,
                        description=case.description, file=case.file, sha256=case.sha256,
                        trials=case.trials, deadline_s=case.deadline_s)



def folder_case(folder: Path) -> Case:
    """A capture folder given directly (not imported): a case named after it."""
    capture = load_capture(folder)
    return capture_case(capture, None, name=folder.resolve().name,
                        description=f"XRT capture in {folder}", file=str(capture.folder / REPLAY),
                        sha256=capture.sha256)


def pointer_case(check: FieldChecker, data: dict, file: str, raw: bytes) -> Case:
    """A case that points at an imported capture (`capture import` writes these)."""
    top = check.mapping(data, (), {"case", "description", "source", "capture", "frame",
                                   "plans", "trials", "deadline_s"},
                        {"case", "description", "capture"})
    name = check.string(top["case"], ("case",), NAME)
    folder = (Path(file).parent / check.string(top["capture"], ("capture",))).resolve()
    capture = load_capture(folder)
    frame = str(top["frame"]) if "frame" in top else None
    plans = top.get("plans")
    if plans is not None and (not isinstance(plans, dict) or not all(
            isinstance(v, (str, int)) for v in plans.values())):
        raise check.error(("plans",), "expected a mapping of plan name to spec")
    trials = (check.integer(top["trials"], ("trials",), 1, 1000)
              if "trials" in top else DEFAULT_TRIALS)
    deadline = (check.number(top["deadline_s"], ("deadline_s",), 0.1, 86_400)
                if "deadline_s" in top else None)
    try:
        return capture_case(capture, frame, name=name,
                            description=check.string(top["description"], ("description",)),
                            file=file, sha256=hashlib.sha256(raw + capture.sha256.encode())
                            .hexdigest(), trials=trials, deadline_s=deadline,
                            plan_specs={str(k): str(v) for k, v in plans.items()}
                            if plans else None)
    except PlanError as err:
        raise check.error(("plans",), str(err)) from None
