"""The simulated pyxrt standing in on the hardware path, on a machine whose amdxdna trace
events are on: each runlist wait appends the driver's events to the fabricated tracefs
buffer as the in-tree driver of Linux 7.0 logs them (xdna_job "sent to device" from
aie2_sched_job_run, and "job timedout" from aie2_sched_job_timedout when the runlist
fails; xdna-driver 234824b1 aie2_ctx.c, the format of the header a2aef56c copied)."""

from __future__ import annotations

import os
from pathlib import Path

import harness.sim.pyxrt as _sim
from harness.sim.pyxrt import *  # noqa: F403

__harness_stand_in__ = True
_clock = [5000.0]


def _append(*events: str) -> None:
    buffer = Path(os.environ["HARNESS_ROOT"]) / "sys" / "kernel" / "tracing" / "trace"
    with open(buffer, "a", encoding="utf-8") as out:
        for text in events:
            _clock[0] += 0.25
            out.write(f"         python3-4321    [003] .....  {_clock[0]:.6f}: {text}\n")


class runlist(_sim.runlist):
    def wait(self, *args, **kwargs):
        _append("xdna_job: fence=(context:9, seqno:1), hwctx.1 seq#:1 sent to device",
                "sched_switch: prev_comm=python3 prev_pid=4321 ==> next_comm=swapper/3")
        try:
            return super().wait(*args, **kwargs)
        except RuntimeError:
            _append("xdna_job: fence=(context:9, seqno:2), hwctx.1 seq#:2 job timedout")
            raise
