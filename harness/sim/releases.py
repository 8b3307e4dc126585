"""The XRT releases the simulator can answer as: what differs between them, and where from.

Users run several XRT releases at once (ROCm/FastFlowLM#712 saw 2.26 installed and
FastFlowLM's bundled 2.21.75 loaded), and what a harness reads differs by release
(Xilinx/XRT, read at each tag):

- the runlist failure message. `runlist_impl::throw_command_error` in
  `src/runtime_src/core/common/api/xrt_kernel.cpp` says only
  ``runlist failed execution`` up to tag 202610.2.21.21; PR #9408 (fd6d182f,
  2025-11) added the state, ``runlist failed execution (ERT_CMD_STATE_X)``, which
  the 2.21 branch (2.21.75 and its tip), 2.23, 2.25 and master carry;
- how a TIMEOUT's health data is told (`amend_aie_error_message`): 2.20 appends a
  newline to every TIMEOUT message and the six health lines only for version-0 data;
  from 202610.2.21.21 version-1 data gets its own layout, version-0 the old one, and
  anything else the bare message; from 2.25 the version-1 layout first names the
  kernel instance and the ELF (`get_elf_identity_from_run`);
- the binding's surface (`src/python/pybind11/src/pyxrt.cpp`): 2.20 and
  202610.2.21.21 share one binding; 2.21.75 adds ``hw_context(device, elf)``; the 2.21
  branch tip (8661761775, PR #9813) adds ``run.get_ctrl_scratchpad_bo``; 2.23 rewrote
  the binding (access modes, xclbin and path contexts, context buffers, keyword
  argument names, deprecation shims) without it; 2.25 has it again; master (963c58ee)
  adds ``graph`` and ``aie.bo``;
- capture (`Runtime.capture_frames`, `xrt-capture`): merged into master by PR #9828
  (b89baa09b8, 2026-06-04, while master built as 2.25) and #9851; no tagged release up to
  202610.2.23.244 has it; 2.26 (49612fa3) and master (963c58ee) are played with it: the
  simulated capture writer (`harness.sim.capture_writer`) answers there only;
- errors of the full-ELF flow: ``ext.kernel(hwctx, name)`` on a context without the
  kernel's ELF says ``no module found ...`` up to the 2.21 branch and ``no ELF found
  ...`` from 2.23; from 2.21.75 an xclbin context is refused as not created from a
  full ELF (`check_and_get_hw_context`).

Features are sets, not thresholds: the 2.21 branch tip has a method 2.23.244 lacks.
"""

from __future__ import annotations

from dataclasses import dataclass

# Binding and runtime features, each present in the releases that list it.
HW_CONTEXT_ELF = "hw_context(device, elf)"
BINDING_2_23 = "the 2.23 binding"
SCRATCHPAD = "run.get_ctrl_scratchpad_bo"
GRAPH_AIE = "graph and aie.bo"
KEYWORDS = "keyword argument names (py::arg)"
V1_HEALTH = "version-1 health layout"
ELF_IDENTITY = "kernel instance and ELF named in the health message"
FULL_ELF_CHECK = "ext.kernel checks the context was made from a full ELF"
ELF_NOT_MODULE = "'no ELF found' for a kernel missing from an ELF context"
CAPTURE = "XRT capture (Runtime.capture_frames: replay.json at exit)"


@dataclass(frozen=True)
class XrtRelease:
    """An XRT release the simulator plays: the tag it was read at, the form of its runlist
    error message, and the features its binding has."""

    name: str                    # the profile token's value: xrt:NAME
    tag: str                     # Xilinx/XRT tag or commit it was read at
    order: int                   # age, for listing
    state_in_message: bool
    features: frozenset[str]
    note: str

    @property
    def message_form(self) -> str:
        return ("runlist failed execution (ERT_CMD_STATE_X)" if self.state_in_message
                else "runlist failed execution")

    def has(self, feature: str) -> bool:
        return feature in self.features


def _release(name: str, tag: str, order: int, state: bool, features: set[str],
             note: str) -> XrtRelease:
    return XrtRelease(name, tag, order, state, frozenset(features), note)


_2_21_75 = {HW_CONTEXT_ELF, V1_HEALTH, FULL_ELF_CHECK}
_2_23 = _2_21_75 | {BINDING_2_23, KEYWORDS, ELF_NOT_MODULE}

RELEASES = {r.name: r for r in (
    _release("2.20", "202520.2.20.197", 0, False, set(),
             "the 2.20 binding; no state in the runlist failure message"),
    _release("2.21.21", "202610.2.21.21", 1, False, {V1_HEALTH},
             "the 2.20 binding and message (the first 2.21 tag); version-1 health layout"),
    _release("2.21", "2.21.75", 2, True, _2_21_75,
             "2.21.75, as FastFlowLM bundles it: hw_context(device, elf); state in the "
             "message (PR #9408)"),
    _release("2.21-tip", "8661761775 (XRT-2.21)", 3, True, _2_21_75 | {SCRATCHPAD},
             "the 2.21 branch tip: 2.21.75 plus run.get_ctrl_scratchpad_bo (PR #9813)"),
    _release("2.23", "202610.2.23.244", 4, True, _2_23,
             "rewritten binding (access modes, xclbin/path contexts, context buffers, "
             "keyword names, deprecation shims)"),
    _release("2.25", "2.25.0", 5, True, _2_23 | {SCRATCHPAD, ELF_IDENTITY},
             "2.23's binding plus run.get_ctrl_scratchpad_bo; the health message names the "
             "kernel instance and ELF"),
    _release("2.26", "49612fa3 (2.26.0)", 6, True,
             _2_23 | {SCRATCHPAD, ELF_IDENTITY, GRAPH_AIE, CAPTURE},
             "2.26.0 (no tag: settings.cmake XRT_VERSION_MINOR 26 at 49612fa3, the commit "
             "amd/xdna-driver 856409ca pins), as the #712 machine has it installed: master's "
             "binding and runlist code (963c58ee is four commits later and changes neither); "
             "XRT's capture (PR #9828, #9851)"),
    _release("master", "963c58ee", 7, True,
             _2_23 | {SCRATCHPAD, ELF_IDENTITY, GRAPH_AIE, CAPTURE},
             "2.25's binding plus graph and aie.bo; XRT's capture (PR #9828, #9851)"),
)}
# What the simulator plays unless a profile names a release: the XRT the
# ROCm/FastFlowLM#712 machine has installed (2.26.0; FastFlowLM loads its bundled 2.21.75)
DEFAULT = "2.26"


def release(name: str) -> XrtRelease:
    return RELEASES[name]
