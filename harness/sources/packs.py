"""Where a case's xclbins come from, and importing packs into `xclbins/<pack>/`.

Search order (STACK.md 5 for FastFlowLM's own places):
1. ``--xclbins DIR`` (the files directly, or ``DIR/<pack>/``);
2. ``xclbins/<pack>/`` in the current folder, then in the harness checkout;
3. FastFlowLM: ``$FLM_XCLBIN_PATH/<pack>/``, ``xclbins/<pack>/`` beside the
   ``flm`` binary, ``share/flm/xclbins/<pack>/`` under its prefix and the usual
   prefixes.
The ``xrt-validate`` pack is XRT's own validate.xclbin, read out of the
``xrt_smi_*.a`` archive of the XRT install (or an older install's loose file).

With the simulated stack and no pack anywhere, synthesized stand-ins with the
same kernel signatures are written to a cache folder, and the report says so.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.formats.ar import read_ar_member
from harness.formats.cache import cache_dir
from harness.formats.output_paths import make_folder
from harness.formats.xclbin import read_xclbin, read_xclbin_cached
from harness.formats.xclbin_view import identity, known_as
from harness.formats.xclbin_writer import flm_spec, synthesize, validate_spec
from harness.formats.yamlio import dump_yaml, write_atomic
from harness.model.errors import BadInput, EnvironmentNotReady, ReportError, XclbinError
from harness.probe.xrt import validate_files, validate_places
from harness.sources.case import Case, CaseKind

# the paths a path a report recorded may be on this machine (harness.report.recorded_paths)
Candidates = Callable[[str], list[str]]

VALIDATE_PACK = "xrt-validate"
PROJECT = Path(__file__).resolve().parents[2]


class PackNotFound(EnvironmentNotReady):
    """A case's xclbins are not on this machine: `summary` says which in a few words (what
    a verdict quotes), the message also where they were looked for and the fix."""

    def __init__(self, summary: str, detail: str = "") -> None:
        super().__init__(summary + detail)
        self.summary = summary


@dataclass
class ResolvedPack:
    """The xclbins a run uses, by role, and where they were found. A report records it
    (`to_report`, `xclbin_entries`) and a continued run takes it back from there
    (`from_report`), its files unchanged."""

    name: str
    files: dict[str, Path]               # role -> file
    source: str                          # where it was found, or "synthesized stand-ins"
    searched: list[str] = field(default_factory=list)
    stand_ins: bool = False

    def to_report(self, *, searched: bool = True) -> dict[str, Any]:
        """The pack as a report's artifacts record it: the case's `pack` (with where it
        was searched for), or a control's."""
        out: dict[str, Any] = {"name": self.name, "source": self.source,
                               "stand_ins": self.stand_ins}
        if searched:
            out["searched"] = self.searched
        return out

    def xclbin_entries(self) -> list[dict[str, Any]]:
        """Each xclbin's identity (role, path, sha256, uuid, kernels, known_as), as a
        report's artifacts record them."""
        return [identity(read_xclbin_cached(path), role) for role, path in self.files.items()]

    @classmethod
    def from_report(cls, pack: dict[str, Any], xclbins: list[dict[str, Any]], name: str,
                    report_path: str, where: Candidates = lambda path: [path]
                    ) -> ResolvedPack:
        """The pack a report recorded (`name` where it names none), refused if any of its
        xclbins is missing or changed since; `where`: the paths a recorded one may be here
        (a redacted report's placeholders put back)."""
        return cls(pack.get("name", name), unchanged_files(xclbins, report_path, where),
                   pack.get("source", ""), pack.get("searched", []),
                   pack.get("stand_ins", False))


def unchanged_files(entries: list[dict[str, Any]], report_path: str,
                    where: Candidates = lambda path: [path]) -> dict[str, Path]:
    """The files a report's xclbin entries name, by role, refused if any changed: of the
    paths each may be here (`where`), the one whose sha256 is the recorded one."""
    files = {}
    for entry in entries:
        found = next((Path(path) for path in where(str(entry["path"]))
                      if Path(path).is_file() and hashlib.sha256(
                          Path(path).read_bytes()).hexdigest() == entry["sha256"]), None)
        if found is None:
            raise ReportError(f"{entry['path']} is missing or changed since {report_path} "
                              "was written; start a new run instead of resuming")
        files[entry["role"]] = found
    return files


def pack_dirs(pack: str) -> list[Path]:
    """Where a pack is looked for when no --xclbins folder is given."""
    dirs = [Path.cwd() / "xclbins" / pack, PROJECT / "xclbins" / pack]
    env = os.environ.get("FLM_XCLBIN_PATH")
    if env:
        dirs += [Path(env) / pack, Path(env)]
    flm = shutil.which("flm")
    if flm:
        bindir = Path(flm).resolve().parent
        dirs += [bindir / "xclbins" / pack, bindir.parent / "share" / "flm" / "xclbins" / pack]
    dirs += [Path(p) / pack for p in ("/usr/share/flm/xclbins", "/usr/local/share/flm/xclbins",
                                      "/opt/fastflowlm/share/flm/xclbins")]
    unique: list[Path] = []
    for d in dirs:
        if d not in unique:
            unique.append(d)
    return unique


def resolve_pack(case: Case, *, xclbins_dir: str | None = None,
                 simulated: bool) -> ResolvedPack:
    searched: list[str] = []
    if case.kind is not CaseKind.CASE:
        return _named_files(case, xclbins_dir, simulated)
    if xclbins_dir:
        return _explicit(case, Path(xclbins_dir))
    if case.pack == VALIDATE_PACK:
        found = _validate_from_xrt(case, searched)
        if found:
            return found
    else:
        for folder in pack_dirs(case.pack):
            searched.append(str(folder))
            files = {role: folder / name for role, name in case.xclbins.items()}
            if all(f.is_file() for f in files.values()):
                return ResolvedPack(case.pack, files, str(folder), searched)
    if simulated:
        return stand_ins(case, searched)
    missing = ", ".join(case.xclbins.values())
    raise PackNotFound(
        f"pack {case.pack} ({missing}) not found",
        f"; searched: {'; '.join(searched) or 'nowhere'}. Give --xclbins DIR or import it "
        f"with `runlist-harness xclbins import SRC --pack {case.pack}`")


def _named_files(case: Case, xclbins_dir: str | None, simulated: bool) -> ResolvedPack:
    """A recipe's or capture's xclbins are the files it names, or stand-ins on the
    simulated stack where they are absent."""
    if xclbins_dir:
        raise BadInput(f"--xclbins: a {case.kind} names its own xclbins "
                       f"({', '.join(case.xclbins.values())}); drop --xclbins")
    files = {role: Path(name) for role, name in case.xclbins.items()}
    if all(f.is_file() for f in files.values()):
        return ResolvedPack(case.pack, files, case.capture or str(Path(case.file).parent), [])
    if simulated:
        return stand_ins(case, [str(f.parent) for f in files.values()])
    missing = ", ".join(str(f) for f in files.values() if not f.is_file())
    raise PackNotFound(f"{case.file} names {missing}, which is not there")


def _explicit(case: Case, base: Path) -> ResolvedPack:
    """An --xclbins folder is used or refused: never another folder, never stand-ins."""
    if not base.is_dir():
        raise BadInput(f"--xclbins {base}: no such folder")
    for folder in (base, base / case.pack):
        files = {role: folder / name for role, name in case.xclbins.items()}
        if all(f.is_file() for f in files.values()):
            return ResolvedPack(case.pack, files, str(folder), [str(base)])
    missing = [name for name in case.xclbins.values() if not (base / name).is_file()]
    raise BadInput(f"--xclbins {base} lacks {', '.join(missing)} of pack {case.pack} (nor has "
                   f"it a {case.pack}/ folder holding them); give the folder with all of "
                   f"{', '.join(case.xclbins.values())}")


def _validate_from_xrt(case: Case, searched: list[str]) -> ResolvedPack | None:
    xilinx_xrt = os.environ.get("XILINX_XRT")
    sources = validate_files(Path("/"), xilinx_xrt)
    if not sources:            # say where it was looked for, not "nowhere"
        searched += validate_places(xilinx_xrt)
    for source in sources:
        searched.append(str(source))
        if source.suffix == ".xclbin":
            data = source.read_bytes()
        else:
            member = read_ar_member(source, "validate.xclbin")
            if member is None:
                continue
            data = member
        folder = cache_dir(VALIDATE_PACK)
        target = folder / "validate.xclbin"
        write_atomic(target, data)
        files = {role: target for role in case.xclbins}
        return ResolvedPack(case.pack, files, str(source), searched)
    return None


def stand_ins(case: Case, searched: list[str]) -> ResolvedPack:
    """Synthesized xclbins with the case's kernel signatures (simulated stack only)."""
    folder = cache_dir("stand-ins", case.pack)
    kernel = case.per_layer[0].kernel
    files: dict[str, Path] = {}
    for role, name in case.xclbins.items():
        runlist_role = role == case.runlist_context
        if case.pack == VALIDATE_PACK or (runlist_role and kernel == "DPU"):
            spec = validate_spec(f"{case.pack}/{role}")
        else:
            spec = flm_spec(f"{case.pack}/{role}")
        if runlist_role and spec.kernel_name != kernel:
            spec = replace(spec, kernel_name=kernel)
        target = folder / Path(name).name
        data = synthesize(spec)
        if not target.is_file() or target.read_bytes() != data:
            write_atomic(target, data)
        files[role] = target
    return ResolvedPack(case.pack, files, f"synthesized stand-ins in {folder}", searched,
                        stand_ins=True)


# -- import ------------------------------------------------------------------------------

def import_pack(source: str, *, pack: str | None = None, dest_root: str = "xclbins",
                force: bool = False) -> tuple[Path, list[dict]]:
    """Copy a pack's xclbins into ``dest_root/<pack>/`` and write its manifest.yaml."""
    if pack is not None and (not pack or pack in (".", "..") or "/" in pack or "\\" in pack
                             or pack.startswith(".")):
        raise BadInput(f"--pack {pack!r}: a pack name is one folder name (no path separators, "
                       "no '..', not hidden)")
    src = Path(source)
    if not src.is_dir():
        raise BadInput(f"{source} is not a folder; give a FastFlowLM pack folder "
                       "(e.g. .../xclbins/Qwen3-1.7B-NPU2) or a model folder")
    if pack and (src / pack).is_dir():
        src = src / pack
    files = sorted(src.glob("*.xclbin"))
    if not files:
        subpacks = sorted(p.name for p in src.iterdir() if p.is_dir() and any(p.glob("*.xclbin")))
        hint = (f"; it holds packs {', '.join(subpacks[:8])}"
                f"{' ...' if len(subpacks) > 8 else ''}: add --pack NAME" if subpacks else "")
        raise BadInput(f"no .xclbin files in {src}{hint}")
    name = pack or src.name
    target = Path(dest_root) / name
    entries = []
    for file in files:
        try:
            meta = read_xclbin(file)
        except XclbinError as err:
            raise BadInput(f"cannot import {file}: {err}") from None
        destination = target / file.name
        if destination.exists() and not force \
                and destination.read_bytes() != file.read_bytes():
            raise BadInput(f"{destination} exists and differs from {file}; pass --force to "
                           "replace it")
        entries.append({"file": file.name, "size": meta.size, "sha256": meta.sha256,
                        "uuid": meta.uuid, "kernels": [k.name for k in meta.kernels],
                        "known_as": known_as(meta), "source": str(file.resolve())})
    make_folder(Path(dest_root), what="--dest")     # the pack's own folder is made below it
    for file in files:
        write_atomic(target / file.name, file.read_bytes())
    manifest = {"pack": name, "imported_from": str(src.resolve()), "files": entries}
    write_atomic(target / "manifest.yaml", dump_yaml(manifest))
    return target, entries
