"""The simulated XDNA stack: a drop-in `pyxrt` (`harness.sim.pyxrt`) backed by a
discrete-event model of XRT, the amdxdna driver flavours and the NPU firmware.

It honours the facts of STACK.md and labels every deviation from them; see
`runlist-harness sim profiles`. What it cannot tell you: anything the
documents do not say. A run on the documented profile answers "what would the
documented stack do"; only hardware answers "what does this machine do".
"""
