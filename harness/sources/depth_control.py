"""The depth-only control of `reproduce`: the case's depth as NOP runs, ELF flow, on
XRT's own validate.xclbin, one runlist, as `xrt-smi validate`'s runlist-latency runs
them (STACK.md 8: five 20-byte buffers, opcode 3, nop.elf). Run beside the case, it
separates "depth alone fails" from "depth fails only with the case's commands"."""

from __future__ import annotations

from dataclasses import replace

from harness.model.plan import Plan, make_plan
from harness.model.results import ELF_FLOW
from harness.sources.case import Case
from harness.sources.load import load_case

CONTROL_CASE = "nop-depth"
PLAN_NAME = "depth-only"
VALIDATE_BUFFERS = (20, 20, 20, 20, 20)


def control_for(case: Case) -> tuple[Case, Plan, str]:
    """The control case, its one plan (the case's whole depth in one runlist), and what
    it runs, in words."""
    depth = case.layers * case.runs_per_layer
    base = load_case(CONTROL_CASE)
    plan = make_plan(PLAN_NAME, str(depth), depth)
    command = replace(base.per_layer[0], buffers=VALIDATE_BUFFERS)
    control = replace(base, layers=depth, per_layer=(command,), plans=(plan,), expect={},
                      flow=ELF_FLOW)
    what = (f"depth-only control: {depth} NOP runs (nop.elf, ELF flow) on XRT's "
            "validate.xclbin in one runlist, as xrt-smi validate's runlist-latency runs them")
    return control, plan, what
