"""Helpers for driving the simulated pyxrt the way host code drives the real one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import harness.sim.pyxrt as pyxrt
from harness.formats.elf_writer import control_code_elf
from harness.formats.txn import nop_stream, word_count, work_stream
from harness.formats.xclbin_writer import flm_spec, synthesize
from harness.sim import control


class Rig:
    """One device, one or more contexts, and runs built IRON-style (3, instr, ninstr, bos)."""

    def __init__(self, folder: Path, profile: str = "staging", *, columns: int = 8,
                 latencies: dict[str, float] | None = None) -> None:
        self.folder = folder
        self.stack = control.configure(profile, latencies=latencies)
        self.dev = pyxrt.device(0)
        self.ctx, self.kernel = self.context("layer", columns=columns)
        self.instr = self.instructions(columns)
        self.bufs = [pyxrt.bo(self.dev, 4096, pyxrt.bo.host_only, self.kernel.group_id(3 + i))
                     for i in range(5)]

    def context(self, stem: str, *, columns: int = 8, start: int = 0):
        spec = replace(flm_spec(f"Rig/{stem}", columns=columns), start_columns=(start,))
        path = self.folder / f"{stem}.xclbin"
        path.write_bytes(synthesize(spec))
        x = pyxrt.xclbin(str(path))
        self.dev.register_xclbin(x)
        ctx = pyxrt.hw_context(self.dev, x.get_uuid())
        return ctx, pyxrt.kernel(ctx, x.get_kernels()[0].get_name())

    def instructions(self, columns: int, *, sync: bool = True):
        stream = nop_stream(columns, self.stack.device.dev_gen)
        bo = pyxrt.bo(self.dev, len(stream), pyxrt.bo.cacheable, self.kernel.group_id(1))
        bo.write(np.frombuffer(stream, dtype=np.uint8), 0)
        if sync:
            bo.sync(pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)
        self.words = word_count(stream)
        return bo

    def run(self, kernel=None, instr=None, ninstr: int | None = None):
        kernel = kernel or self.kernel
        r = pyxrt.run(kernel)
        r.set_arg(0, 3)
        r.set_arg(1, instr or self.instr)
        r.set_arg(2, self.words if ninstr is None else ninstr)
        for i, b in enumerate(self.bufs):
            r.set_arg(3 + i, b)
        return r

    def runlist(self, depth: int, ctx=None, kernel=None, *, unsynced_at: int | None = None):
        """`depth` runs in one runlist; the run at `unsynced_at` carries instructions never
        synced to the device (its copy is all zeros: the firmware fails that command)."""
        rl = pyxrt.runlist(ctx or self.ctx)
        unsynced = None if unsynced_at is None else self.instructions(8, sync=False)
        runs = [self.run(kernel, instr=unsynced if i == unsynced_at else None)
                for i in range(depth)]
        for r in runs:
            rl.add(r)
        return rl, runs

    def work_instructions(self, columns: int = 8):
        """An instruction buffer holding the stand-in work stream (not NOOPs), synced; and
        its length in words."""
        stream = work_stream(columns, self.stack.device.dev_gen)
        bo = pyxrt.bo(self.dev, len(stream), pyxrt.bo.cacheable, self.kernel.group_id(1))
        bo.write(np.frombuffer(stream, dtype=np.uint8), 0)
        bo.sync(pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)
        return bo, word_count(stream)

    def mixed_runlist(self, kinds: str):
        """A runlist whose runs carry work (`w`) or the one-NOOP stream (`n`), in order."""
        work, words = self.work_instructions()
        rl = pyxrt.runlist(self.ctx)
        runs = [self.run(instr=work, ninstr=words) if kind == "w" else self.run()
                for kind in kinds]
        for r in runs:
            rl.add(r)
        return rl, runs

    def kernel_lines(self) -> list[str]:
        """The simulated kernel log's lines so far, as the driver wrote them."""
        return [r.text for r in self.stack.kernel_log.records]


def outcome(rl) -> str:
    """Execute and wait; 'COMPLETED' or the RuntimeError's whole message, every line and
    newline XRT's release amends it with (a first line alone hides a wrong amendment)."""
    rl.execute()
    try:
        rl.wait()
    except RuntimeError as err:
        return str(err)
    return "COMPLETED"


def failure(rl) -> str:
    """Execute and wait, which must fail: the RuntimeError's whole message."""
    said = outcome(rl)
    assert said != "COMPLETED", "the runlist completed"
    return said


HEALTH_FIELDS = ("txn_op_idx", "ctx_pc", "fatal_error_type", "fatal_error_exception_type",
                 "fatal_error_exception_pc", "fatal_error_app_module")


def health_lines(value: str) -> str:
    """XRT's six context-health lines (`amend_aie_error_message`), each field reading
    `value`, and the newline that ends them."""
    return "".join(f"{name} = {value}\n" for name in HEALTH_FIELDS)


NOT_MODELLED_LINES = health_lines("not modelled")   # the simulated firmware's report
ZERO_LINES = health_lines("0x00000000")             # a zeroed version-0 report


def states(runs) -> list[str]:
    return [r.state().name.replace("ERT_CMD_STATE_", "") for r in runs]


def nop_elf(folder: Path, columns: int) -> str:
    """A control-code ELF holding the one-NOOP TXN for `columns` columns; its path."""
    path = folder / f"nop{columns}.elf"
    path.write_bytes(control_code_elf(nop_stream(columns)))
    return str(path)


def full_elf_runlist(path: Path, runs: int):
    """A runlist of `runs` runs of the full ELF at `path`'s kernel main:sequence, each with
    three host-only buffers, on a context made of that ELF (hw_context(device, elf))."""
    device = pyxrt.device(0)
    ctx = pyxrt.hw_context(device, pyxrt.elf(str(path)))
    kernel = pyxrt.ext.kernel(ctx, "main:sequence")
    rl = pyxrt.runlist(ctx)
    for _ in range(runs):
        r = pyxrt.run(kernel)
        for index in range(3):
            r.set_arg(index, pyxrt.bo(device, 4096, pyxrt.bo.host_only, 0))
        rl.add(r)
    return rl


def simulated_report(folder: Path, *options: str, exit_code: int = 0) -> Path:
    """A report of a run on the simulated stack (minicpm5-2b-decode, one trial of the
    42-layer plan unless `options` say otherwise) in `folder`, its cache there too."""
    from click.testing import CliRunner

    from harness.app.cli import main
    out = folder / "r.yaml"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_PYXRT", "none")
        patch.setenv("XDG_CACHE_HOME", str(folder / ".cache"))
        done = CliRunner().invoke(main, ["run", "minicpm5-2b-decode", "--plan", "42",
                                         "--trials", "1", "--no-isolate", *options,
                                         "--out", str(out)])
    assert done.exit_code == exit_code, done.output
    return out
