"""An emulated NPU for the XRT installed on the machine: the amdxdna driver's interface
answered by the harness's driver and firmware model (`runlist-harness emulate`).

`preload.c` is the library XRT's process loads (LD_PRELOAD): it shows the device where
XRT's XDNA shim looks for one and carries its ioctls to the model process (`server`),
where `driver` answers them over `harness.sim.stack`: `objects` (files, contexts,
syncobjs), `syncobjs` and `info` (their ioctls), `memory` and `packets` (the buffers both
processes map, and the command packets in them), `replies`, `uapi` (the interface's
numbers and layouts), `rules` (each rule and where it was read). `device` writes the
device's sysfs tree, `session` runs one emulation, `build` compiles the library;
`harness.probe.emulation` tells a process it runs under one.
"""
