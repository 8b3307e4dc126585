"""What each run of a case carried, in words a report puts on its first screen: the
control code (the one-NOOP TXN stream, the case's own instruction streams or ELFs, a
recipe's, a captured engine's) and the buffers ("five 4 KiB buffers, never written").

A NOOP run does no work: a plan of NOOP runs tests how deep a runlist the stack takes,
not what the decode's kernels do, and its report says so, with how to run the engine's
own commands instead (an XRT capture). The call shape each flow shares with an engine
(`harness.model.results.flow_text`) is said apart: it is how runs are submitted, not
what they carry.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from harness.model.results import ELF_FLOW, FULL_ELF
from harness.sources.case import NOP, STAND_IN_WORK, Case, CaseKind

NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
           "ten", "eleven", "twelve")
@dataclass(frozen=True)
class Workload:
    """What each run of a case carried, in words, for the report and the summary."""

    control_code: str       # what each run's control code was
    buffers: str            # what each run's buffers were
    nop_only: bool          # every run carried the one-NOOP stream and nothing else

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def count(n: int) -> str:
    return NUMBERS[n] if 0 <= n < len(NUMBERS) else str(n)


def size_text(size: int) -> str:
    """4096 -> ``4 KiB``; 20 -> ``20-byte``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size}-byte"


def approx_size(size: int) -> str:
    """12345678 -> ``11.8 MiB``: a size to a tenth of its unit (free space, bytes written)."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def buffers_text(sizes: tuple[int, ...] | list[int]) -> str:
    """``five 4 KiB buffers``; ``two 4 KiB and one 20-byte buffer``; ``no buffers``."""
    if not sizes:
        return "no buffers"
    groups = Counter(sizes)
    parts = [f"{count(n)} {size_text(size)}" for size, n in groups.items()]
    plural = sum(groups.values()) > 1
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{text} buffer{'s' if plural else ''}"


def describe(case: Case, flow: str | None) -> Workload:
    """What each run of `case` carries when it runs in `flow` (the case's own by default)."""
    flow = flow or case.flow
    if case.kind is CaseKind.CAPTURE:
        return _captured(case)
    if case.kind is CaseKind.RECIPE:
        return _recipe(case)
    instructions = [c.instructions for c in case.per_layer]
    nop_only = bool(instructions) and all(i == NOP for i in instructions)
    own = sorted({Path(i).name for i in instructions if i != NOP})
    if nop_only:
        stream = "the one-NOOP TXN stream (a single NOOP operation: no work)"
    else:
        stream = "the case's own instruction streams (" + ", ".join(own) + ")" \
            + (" and the one-NOOP TXN stream" if NOP in instructions else "")
    if flow == ELF_FLOW:
        code = f"{stream}, wrapped in a control-code ELF per kernel"
    elif flow == FULL_ELF:
        code = ("the case's full ELFs (" + ", ".join(
            Path(p).name for paths in case.programs.values() for p in paths) + ")"
                if case.programs else
                f"a stand-in full ELF the harness built from {stream} (simulated stack only)")
        nop_only = nop_only and not case.programs
    else:
        code = f"{stream}, as an instruction buffer"
    return Workload(code, shared_buffers(case) + ", never written (zero-filled as allocated)",
                    nop_only)


def shared_buffers(case: Case) -> str:
    """The buffers a case's runs take: each command's are made once per trial and set on
    every run of it (`harness.execution.session`), so ``five 4 KiB buffers shared by all 42
    runs``, never five per run; a recipe's or capture's runs take its named buffers."""
    if case.order is not None:
        return _named_run_buffers(case)
    runs = case.layers
    if len(case.per_layer) == 1:
        sizes = case.per_layer[0].buffers
        return buffers_text(sizes) + (f" shared by all {runs} runs" if sizes and runs > 1
                                      else "")
    return "; ".join(f"{c.kernel}: {buffers_text(c.buffers)}"
                     + (f" shared by its {runs} runs" if c.buffers and runs > 1 else "")
                     for c in case.per_layer)


def run_buffer_sizes(case: Case) -> list[int] | None:
    """The sizes of the buffers every run of `case` takes, where every run takes the same
    ones (one command, or a recipe's or capture's runs all on the same named buffers);
    None where they differ from run to run."""
    if case.order is None:
        return list(case.per_layer[0].buffers) if len(case.per_layer) == 1 else None
    taken = [list(dict.fromkeys(value for _, kind, value in case.per_layer[i].args or ()
                                if kind == "bo")) for i in case.order]
    if not any(taken):
        return []
    if all(set(run) == set(taken[0]) for run in taken):
        return [case.buffers[name].size for name in taken[0]]
    return None


def _named_run_buffers(case: Case) -> str:
    """A recipe's or capture's runs, by the named buffers they take."""
    taken = [list(dict.fromkeys(value for _, kind, value in case.per_layer[i].args or ()
                                if kind == "bo")) for i in case.order or ()]
    names = {name for run in taken for name in run}
    if not names:
        return "no buffers"
    runs = len(taken)
    if all(set(run) == set(taken[0]) for run in taken):
        return buffers_text([case.buffers[name].size for name in taken[0]]) + (
            f" shared by all {runs} runs" if runs > 1 else "")
    total = sum(case.buffers[name].size for name in names)
    return f"{count(len(names))} buffers ({size_text(total)} in all) across its {runs} runs"


def _elf_names(case: Case) -> list[str]:
    return sorted({Path(c.elf).name for c in case.per_layer if c.elf})


def _named_buffers(case: Case) -> str:
    filled = sum(1 for b in case.buffers.values() if b.data)
    total = sum(b.size for b in case.buffers.values())
    return (f"{count(len(case.buffers))} named buffers ({size_text(total)} in all), "
            f"{count(filled)} filled from files" if case.buffers else "no buffers")


def _recipe(case: Case) -> Workload:
    elfs = _elf_names(case)
    without = any(c.elf is None for c in case.per_layer)
    code = ("the recipe's control-code ELFs (" + ", ".join(elfs) + ")" if elfs else "")
    if without:
        # a control code the recipe names but that is not here, or none named at all
        code += (" and, " if code else "") + ("a NOP stand-in where the recipe's control "
                                              "code is not here or not named")
    return Workload(code, _named_buffers(case), False)


def _captured(case: Case) -> Workload:
    elfs = _elf_names(case)
    code = (f"the captured application's own commands: {count(len(elfs))} control-code "
            f"ELF{'s' if len(elfs) != 1 else ''} as it submitted them" if elfs
            else "the captured application's own commands, as it submitted them")
    return Workload(code, _named_buffers(case)
                    + " (restored to what they held when the frame started)", False)


def with_stand_in_work(case: Case) -> Case:
    """`case` with every run carrying the simulator's stand-in work stream instead of its
    control code: what investigate runs as "the work" where no capture gives the engine's
    own, to tell a hang in the work from a depth limit on the simulated stack."""
    return replace(case, per_layer=tuple(replace(command, instructions=STAND_IN_WORK)
                                         for command in case.per_layer))
