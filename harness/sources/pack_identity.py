"""Whether the xclbins found for a case are the ones it expects, by what FastFlowLM's table
of shipped files (`harness/data/known_xclbins.yaml`) knows of their bytes.

A file is as the case expects when the table knows its sha256 under the case's pack (its
own file, or one it shares with other packs), under a file the case declares it reuses
(`reuses:`, MiniCPM5's layer.xclbin is Qwen3-1.7B-NPU2's), or not at all (a pack the table
does not hold, a community pack's own file: there is nothing to compare). It differs when
the table knows it only as other packs' files.

Packs share files (one dequant.xclbin serves 18 of them), so a file that differs is
warned of, naming it, and the run goes on. When every file the case names is one other
pack's, the folder is that pack's (the MiniCPM5 case given Qwen3-1.7B-NPU2's folder): its
report would say it ran the case's pack while it ran another's, so the run is refused
before anything runs, unless `--allow-other-pack` takes it, and then the report names
every file that differs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.formats.known import table_source
from harness.formats.xclbin import read_xclbin_cached
from harness.formats.xclbin_view import known_as
from harness.model.errors import BadInput
from harness.sources.case import Case, CaseKind
from harness.sources.packs import ResolvedPack

ALLOW_OPTION = "--allow-other-pack"


@dataclass(frozen=True)
class FileIdentity:
    """One xclbin of the pack: what the table calls its bytes, and what the case expects."""

    role: str
    file: str                       # its name in the pack's folder
    known_as: tuple[str, ...]       # every name FastFlowLM shipped these bytes under
    pack: str                       # the case's pack: a file of it is as expected
    reuses: str | None = None       # the other pack's file the case says this one is

    @property
    def reused(self) -> bool:
        return self.reuses is not None and self.reuses in self.known_as

    @property
    def differs(self) -> bool:
        """The table knows these bytes, and only as files the case does not expect."""
        return bool(self.known_as) and not self.reused and not any(
            name.startswith(f"{self.pack}/") for name in self.known_as)

    @property
    def packs(self) -> set[str]:
        return {name.split("/")[0] for name in self.known_as}

    def first_name(self, beside: tuple[FileIdentity, ...] = ()) -> str:
        """Its name in the table under the pack the files `beside` it are most often of
        (where they came from, most likely)."""
        def shared(name: str) -> int:
            return -sum(name.split("/")[0] in other.packs for other in beside
                        if other is not self)
        return min(self.known_as, key=shared)

    def named(self, beside: tuple[FileIdentity, ...] = ()) -> str:
        """`first_name`, with how many more packs ship it."""
        more = len(self.known_as) - 1
        return self.first_name(beside) + (f" (and {more} more pack{'s' if more > 1 else ''})"
                                          if more else "")


@dataclass(frozen=True)
class PackIdentity:
    """The pack's files against what the case expects of them."""

    pack: str
    source: str
    files: tuple[FileIdentity, ...]

    @property
    def differing(self) -> list[FileIdentity]:
        return [f for f in self.files if f.differs]

    @property
    def folder_of(self) -> str | None:
        """The one other pack every file is a file of, when some file differs: the folder
        is that pack's. The folder's own name decides between packs that share them all."""
        if not self.differing or not all(f.known_as for f in self.files):
            return None
        common = set.intersection(*(f.packs for f in self.files)) - {self.pack}
        if not common:
            return None
        return Path(self.source).name if Path(self.source).name in common else sorted(common)[0]

    def text(self, *, allowed: bool) -> str:
        """What the console and the report say of the files that differ."""
        differing = self.differing
        owner = self.folder_of
        names = _listed([f.file for f in differing])
        verb = "is" if len(differing) == 1 else "are"
        if owner:
            said = (f"the xclbins found for {self.pack} ({self.source}) are {owner}'s pack: "
                    f"{names} {verb} {owner}'s where the case expects {self.pack}'s own")
        else:
            said = (f"of the xclbins found for {self.pack} ({self.source}), "
                    + "; ".join(f"{f.file} is {f.named(self.files)}" for f in differing)
                    + f", where the case expects {self.pack}'s own")
        reused = [f for f in self.files if f.reused]
        if reused:
            said += "; " + "; ".join(f"{f.file} is {f.reuses}, as the case expects (it "
                                     "reuses that file)" for f in reused)
        said += f" (by sha256, in FastFlowLM's table of shipped xclbins, {_table()})"
        if allowed:
            return said + f"; the run uses them, as {ALLOW_OPTION} asked"
        return said + "; the run uses them as given"

    def refusal(self) -> str:
        return (self.text(allowed=False).removesuffix("; the run uses them as given")
                + f". Give --xclbins the folder of {self.pack}'s own pack (or import it: "
                f"`runlist-harness xclbins import SRC --pack {self.pack}`), or pass "
                f"{ALLOW_OPTION} to run with these, the report naming each file")

    def to_report(self, *, allowed: bool) -> dict[str, Any]:
        """What `artifacts.pack.identity` records: the table, each file that differs (with
        the name the table gives it first), whose folder it is, and whether it was taken
        on request."""
        return {"table": table_source(),
                "differs": [{"role": f.role, "file": f.file,
                             "known_as": f.first_name(self.files),
                             "packs": len(f.packs), "expected": f"{self.pack}'s own"}
                            for f in self.differing],
                "folder_of": self.folder_of,
                "taken_with": ALLOW_OPTION if allowed else None}


class OtherPack(BadInput):
    """A case's xclbins are another pack's folder, and the run was not asked to take it."""


def pack_identity(case: Case, pack: ResolvedPack) -> PackIdentity | None:
    """The pack's files against the case's expectations; None where there are none to
    hold them to: stand-ins, a recipe's or capture's own files."""
    if pack.stand_ins or case.kind is not CaseKind.CASE:
        return None
    return PackIdentity(case.pack, pack.source, tuple(
        FileIdentity(role, Path(path).name, tuple(known_as(read_xclbin_cached(path))),
                     case.pack, case.reuses.get(role))
        for role, path in pack.files.items()))


def check_identity(case: Case, pack: ResolvedPack, *, allowed: bool
                   ) -> tuple[list[str], dict[str, Any] | None]:
    """Before a run: refuse a pack that is another pack's folder (unless `allowed`); the
    warnings to say and the report's record of the files that differ otherwise."""
    identity = pack_identity(case, pack)
    if identity is None or not identity.differing:
        return [], None
    if identity.folder_of and not allowed:
        raise OtherPack(identity.refusal())
    return [identity.text(allowed=allowed)], identity.to_report(allowed=allowed)


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _table() -> str:
    repo, _, commit = table_source().partition("@")
    return f"{repo}@{commit[:12]}" if commit else repo
