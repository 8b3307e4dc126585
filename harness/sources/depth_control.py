"""The depth-only control of `reproduce`: the case's depth as NOP runs, ELF flow, on
XRT's own validate.xclbin, one runlist, as `xrt-smi validate`'s runlist-latency runs
them (STACK.md 8: five 20-byte buffers, opcode 3, nop.elf). Run beside the case, it
separates "depth alone fails" from "depth fails only with the case's commands"."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

from harness.model.plan import Plan, make_plan
from harness.model.results import ELF_FLOW
from harness.sources.case import Case, CaseKind
from harness.sources.load import load_case
from harness.sources.workload import describe, run_buffer_sizes, shared_buffers

CONTROL_CASE = "nop-depth"
PLAN_NAME = "depth-only"
VALIDATE_BUFFERS = (20, 20, 20, 20, 20)
VALIDATE = "XRT's validate.xclbin"


def control_for(case: Case, *, stand_in: bool = False) -> tuple[Case, Plan, str]:
    """The control case, its one plan (the case's whole depth in one runlist), and what
    it runs, in words (on a synthesized stand-in for validate.xclbin, where the simulated
    stack found none: `stand_in`)."""
    depth = case.layers * case.runs_per_layer
    base = load_case(CONTROL_CASE)
    plan = make_plan(PLAN_NAME, str(depth), depth)
    command = replace(base.per_layer[0], buffers=VALIDATE_BUFFERS)
    control = replace(base, layers=depth, per_layer=(command,), plans=(plan,), expect={},
                      flow=ELF_FLOW)
    validate = (f"a synthesized stand-in for {VALIDATE}" if stand_in else VALIDATE)
    what = (f"depth-only control: {depth} NOP runs (nop.elf, ELF flow) on {validate} in one "
            "runlist, as xrt-smi validate's runlist-latency runs them; against the case: "
            f"{_differences(case, control, validate)}")
    return control, plan, what


def _differences(case: Case, control: Case, validate: str) -> str:
    """What the control keeps of the case and what it changes, so a reader knows what its
    outcome can and cannot separate."""
    mine = describe(case, None)
    same = ["the same depth in one runlist"]
    other = []
    if mine.nop_only:
        same.append("the same one-NOOP control code")
    else:
        other.append("NOOPs instead of the case's own control code")
    # by its name in the pack, capture or recipe folder: never the path it has here
    xclbin = case.xclbins.get(case.runlist_context)
    context = Path(xclbin).name if xclbin else f"its {case.runlist_context} context"
    kernels = sorted({c.kernel for c in case.per_layer})
    if xclbin is not None and xclbin == control.xclbins.get(control.runlist_context):
        same.append(f"the same xclbin ({context})")
    else:
        other.append(f"another xclbin: {validate} (kernel "
                     f"{control.per_layer[0].kernel}) instead of {context} "
                     f"({', '.join(kernels)})")
    ours, theirs = run_buffer_sizes(case), run_buffer_sizes(control)
    if ours is None or theirs is None or Counter(ours) != Counter(theirs):
        other.append(f"{shared_buffers(control)} instead of {shared_buffers(case)}")
    if case.kind is CaseKind.CASE and case.flow != ELF_FLOW:
        other.append(f"the ELF flow instead of the case's {case.flow}")
    return "; ".join(same) + "; but " + "; ".join(other)
