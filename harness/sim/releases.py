"""The XRT releases the simulator can answer as: what differs between them, and where from.

Users run several XRT releases at once (ROCm/FastFlowLM#712 saw 2.26 installed and
FastFlowLM's bundled 2.21.75 loaded), and two things a harness reads differ by
release (Xilinx/XRT, read at each tag):

- the runlist failure message. `runlist_impl::throw_command_error` in
  `src/runtime_src/core/common/api/xrt_kernel.cpp` says only
  ``runlist failed execution`` up to tag 202610.2.21.21; PR #9408 (fd6d182f,
  2025-11) added the state, ``runlist failed execution (ERT_CMD_STATE_X)``, which
  the 2.21 branch tip (2.21.75), 2.23, 2.25 and master carry;
- the binding's surface (`src/python/pybind11/src/pyxrt.cpp`): 2.20 and
  202610.2.21.21 share one binding; 2.21.75 adds ``hw_context(device, elf)``; 2.23
  rewrote it (access modes, xclbin and path contexts, context buffers, deprecation
  shims for ``load_xclbin`` and ``kernel(device, uuid, name)``); 2.25 adds
  ``run.get_ctrl_scratchpad_bo``; master (963c58ee) adds ``graph`` and ``aie.bo``.
"""

from __future__ import annotations

from dataclasses import dataclass

# Binding features, each present from one release on (see FEATURES below).
HW_CONTEXT_ELF = "hw_context(device, elf)"
BINDING_2_23 = "the 2.23 binding"
SCRATCHPAD = "run.get_ctrl_scratchpad_bo"
GRAPH_AIE = "graph and aie.bo"


@dataclass(frozen=True)
class XrtRelease:
    name: str                    # the profile token's value: xrt:NAME
    tag: str                     # Xilinx/XRT tag or commit it was read at
    order: int                   # for "from this release on" comparisons
    state_in_message: bool
    note: str

    @property
    def message_form(self) -> str:
        return ("runlist failed execution (ERT_CMD_STATE_X)" if self.state_in_message
                else "runlist failed execution")

    def has(self, feature: str) -> bool:
        return self.order >= FEATURES[feature]


RELEASES = {r.name: r for r in (
    XrtRelease("2.20", "202520.2.20.197", 0, False,
               "the 2.20 binding; no state in the runlist failure message"),
    XrtRelease("2.21.21", "202610.2.21.21", 1, False,
               "the 2.20 binding and message (the first 2.21 tag)"),
    XrtRelease("2.21", "2.21.75", 2, True,
               "2.21 branch tip, as FastFlowLM bundles it: hw_context(device, elf); state "
               "in the message (PR #9408)"),
    XrtRelease("2.23", "202610.2.23.244", 3, True,
               "rewritten binding (access modes, xclbin/path contexts, context buffers, "
               "deprecation shims)"),
    XrtRelease("2.25", "2.25.0", 4, True, "2.23's binding plus run.get_ctrl_scratchpad_bo"),
    XrtRelease("master", "963c58ee", 5, True, "2.25's binding plus graph and aie.bo"),
)}
FEATURES = {HW_CONTEXT_ELF: 2, BINDING_2_23: 3, SCRATCHPAD: 4, GRAPH_AIE: 5}
NEWEST = "master"


def release(name: str) -> XrtRelease:
    return RELEASES[name]
