"""Contexts made from full ELFs (the full-elf flow): the case's own programs, or, on the
simulated stack only, a stand-in built from its commands.

A full ELF configures the array itself (`harness.formats.elf`), so mlir-aie's ``aiecc
--generate-full-elf``, IRON and mlir-air build one from the design; FastFlowLM's packs
carry xclbins and partial control-code ELFs instead. For a decode case run in the
full-elf flow without `programs:`, the simulated stack gets a stand-in: one full ELF per
command, its control code the command's TXN, sized to the runlist context's partition.
The hardware path never runs a stand-in (it would configure nothing): it asks for the
real ELF.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.formats.elf import ElfError, read_elf
from harness.model.errors import BadInput, EnvironmentNotReady
from harness.model.results import FULL_ELF
from harness.sources.case import NOP, STAND_IN_WORK, Case

SUBKERNEL = "sequence"


@dataclass(frozen=True)
class Programs:
    """The full ELFs each context of a trial is made from, the kernel name each command
    opens, and whether they are a stand-in."""

    files: dict[str, list[str]]          # role -> full ELFs
    kernels: list[str | None]            # per command: the name ext.kernel opens, if renamed
    stand_in: bool


def programs_for(case: Case, flow: str, columns: int, *, simulated: bool) -> Programs:
    """The full-ELF contexts a trial of `case` makes in `flow`."""
    files = {role: list(paths) for role, paths in case.programs.items()}
    if flow != FULL_ELF or case.runlist_context in files:
        return Programs(files, [None] * len(case.per_layer), False)
    if case.order is not None:
        raise BadInput(f"{case.file}: the full-elf flow needs a full ELF for context "
                       f"{case.runlist_context!r}; this {case.kind} names none")
    if not simulated:
        raise EnvironmentNotReady(
            f"--flow full-elf needs a full ELF for context {case.runlist_context!r} (built by "
            "mlir-aie's aiecc --generate-full-elf, say): name it under programs: in the "
            "case; the stand-in the harness builds runs only on the simulated stack")
    from harness.formats.elf_writer import full_elf_file
    from harness.formats.txn import nop_stream, work_stream
    kernels: list[str | None] = []
    paths: list[str] = []
    for i, command in enumerate(case.per_layer):
        name = command.kernel if len(case.per_layer) == 1 else f"{command.kernel}_{i}"
        stream = nop_stream(columns) if command.instructions == NOP else \
            work_stream(columns) if command.instructions == STAND_IN_WORK else \
            Path(command.instructions).read_bytes()
        paths.append(str(full_elf_file(stream, columns, kernel=name,
                                       args=("void*",) * len(command.buffers))))
        kernels.append(f"{name}:{SUBKERNEL}")
    return Programs({case.runlist_context: paths}, kernels, True)


def check_programs(case: Case, programs: Programs) -> None:
    """What XRT would refuse of the full ELFs, refused before any trial starts."""
    for role, paths in programs.files.items():
        declared: dict[str, Any] = {}
        for path in paths:
            try:
                elf = read_elf(path)
                kernels = elf.kernels
            except ElfError as err:
                raise BadInput(f"{role} program: {err}") from None
            if not elf.is_full:
                raise BadInput(f"{role} program {path} is not a full ELF (no "
                               ".note.xrt.configuration): XRT makes no hardware context from "
                               "it ('ELF is missing xrt configuration info')")
            declared.update({k.name: k for k in kernels})
        if role != case.runlist_context:
            continue
        for i, command in enumerate(case.per_layer):
            name = (programs.kernels[i] or command.kernel).split(":", 1)[0]
            if name not in declared:
                raise BadInput(f"{case.file}: run {i} opens kernel {name!r}, which no ELF of "
                               f"context {role!r} declares ({', '.join(declared) or 'none'})")
            wanted = len(command.buffers) if command.args is None else \
                1 + max((a[0] for a in command.args), default=-1)
            if wanted > len(declared[name].args):
                raise BadInput(f"{case.file}: run {i} sets {wanted} arguments of "
                               f"{declared[name].signature}")


def program_identity(role: str, path: str, stand_in: bool) -> dict[str, Any]:
    """A full ELF's entry in a report's artefacts."""
    data = Path(path).read_bytes()
    elf = read_elf(path)
    return {"role": role, "path": str(Path(path).resolve()),
            "sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
            "partition": elf.partition_size, "uuid": elf.cfg_uuid,
            "kernels": [k.signature for k in elf.kernels], "stand_in": stand_in}
