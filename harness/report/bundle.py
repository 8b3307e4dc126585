"""One `.tar.gz` to attach to an upstream issue (GitHub attaches files, not folders).

It holds, under one top folder: a README for the maintainer, the rendered report, the
report itself (redacted by default), every trial's kernel-log lines, `xrt-smi`'s output
when the report has it, and the plans as XRT run recipes (from REPORT.recipes/ beside
the report, else written afresh). It ships nothing from outside the report's folder:
symlinks are not followed, xclbins (FastFlowLM's binaries) are named with their sha256
instead of included, and no path the report's header names is trusted (a header is
text anyone can edit): only REPORT.recipes/ is read, and a case or xclbin the header
names only when its sha256 is the one the report recorded. Every member's name is plain
(no `..`, never absolute), whatever the archive is called.

A report of any size bundles in flat memory: what the bundle holds is written to a
scratch folder a part at a time (the redacted report an entry at a time), and the
archive is written beside its target and renamed into place once whole.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import shutil
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.formats.printable import escape_controls
from harness.formats.scratch import make_owned
from harness.formats.yamlio import atomic_file, dump_yaml
from harness.model.errors import BadInput, EnvironmentNotReady, HarnessError, RedactionFault
from harness.report import render as rendering
from harness.report.digest import Digest, ReportView
from harness.report.fileformat import entry_line
from harness.report.header import ReportHeader, read_header, section
from harness.report.model import JOURNAL, continue_command, is_simulated, mapping, source_tag
from harness.report.placeholders import file_safe, garbled
from harness.report.provenance import captured_note
from harness.report.reader import ReportReader, parse_entry
from harness.report.recorded_paths import on_this_machine
from harness.report.verdict import verdict_lines

README = "README.md"
REPORT_MD = "report.md"
KERNEL_LOG = "kernel-log.txt"
XRT_SMI = "xrt-smi.txt"
RECIPES = "recipes"
NOT_SHIPPED = (".xclbin",)
MAX_SEARCH_RECIPES = 8
MAX_CASE_BYTES = 16 << 20       # a case is a page of YAML; a bigger "case" is not one
MAX_XCLBIN_BYTES = 1 << 30
COPY_BLOCK = 1 << 20


@dataclass(frozen=True)
class LeftOut:
    """A file or folder the bundle does not ship (its name, or the path the report named),
    and why."""

    name: str
    why: str
    xclbin: bool = False          # an xclbin of the recipes: someone copies it in

    def __str__(self) -> str:
        return f"{self.name}: {self.why}"


@dataclass
class Contents:
    """What goes in: name inside the top folder -> its bytes, or a file holding them; what
    was left out and why."""

    files: dict[str, bytes | Path] = field(default_factory=dict)
    left_out: list[LeftOut] = field(default_factory=list)
    xclbins_to_copy: list[str] = field(default_factory=list)   # recipes name, nobody ships
    unfinished_command: str | None = None   # a report that did not finish: what wrote it

    def names(self) -> list[str]:
        """Top-level names, a folder once (``recipes/``)."""
        seen: list[str] = []
        for name in self.files:
            top = name.split("/", 1)[0] + ("/" if "/" in name else "")
            if top not in seen:
                seen.append(top)
        return seen

    def text(self, name: str) -> str:
        held = self.files[name]
        return held.read_text("utf-8") if isinstance(held, Path) else held.decode("utf-8")


def bundle_path(report: Path, shown: Callable[[str], str] = str) -> Path:
    """Where `report`'s bundle goes by default: beside it, named after it as `shown`
    (redacted, where the report's name holds a private one)."""
    return report.with_name(shipped_name(report.stem, shown) + ".bundle.tar.gz")


def shipped_name(name: str, shown: Callable[[str], str] = str) -> str:
    """A file's name as what is attached names it: redacted, and safe as a file name."""
    return file_safe(shown(name))


def _recipes(report: Path, digest: Digest, contents: Contents, scratch: Path) -> None:
    """The plans as recipes: REPORT.recipes/ beside the report when it is there, else
    written afresh from the case. Paths are read as the report recorded them (redaction
    changes what is written, never where it is read from)."""
    data = digest.document
    # Only the folder named after the report itself: a header is text anyone can edit, and
    # its `exports.folder` naming ~/.ssh or another folder beside the report must not
    # make us ship what is in there.
    folder = report.with_name(report.stem + ".recipes")
    exports = mapping(data.get("exports"))
    named = exports.get("folder")
    if named and (not isinstance(named, str) or Path(named).name != folder.name
                  or os.path.realpath(Path(named).parent) != os.path.realpath(folder.parent)):
        contents.left_out.append(LeftOut(str(named), "the report names it as its recipes "
                                         f"folder; only {folder.name}/ beside the report is "
                                         "read"))
    if folder.is_dir() and not folder.is_symlink():
        _take_folder(folder, contents)
        return
    target = scratch / "recipes"
    why = _export_afresh(data, digest.failed_plans, target, contents)
    if why:
        contents.left_out.append(LeftOut("recipes", why))
        return
    _take_folder(target, contents)


def _take_folder(folder: Path, contents: Contents) -> None:
    root = folder.resolve()
    for path in sorted(folder.rglob("*")):
        name = f"{RECIPES}/{path.relative_to(folder).as_posix()}"
        if path.is_symlink():
            contents.left_out.append(LeftOut(name, "a symlink (not followed)",
                                             xclbin=path.suffix in NOT_SHIPPED))
            continue
        if not path.is_file() or root not in path.resolve().parents:
            continue
        if path.suffix in NOT_SHIPPED:
            contents.left_out.append(LeftOut(name, f"an xclbin, not shipped (sha256 "
                                             f"{_sha256_of(path)}); put your pack's copy "
                                             "there", xclbin=True))
            continue
        contents.files[name] = path


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        for block in iter(lambda: source.read(COPY_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def recorded_file(recorded: Any, sha256: Any, limit: int) -> Path | None:
    """The file a report names, when it is still the very file the run used: a plain file
    (no FIFO nor device), at most `limit` bytes, whose sha256 is the one the report
    recorded. Anything else is never read further, so a header edited to name a private
    file yields nothing of it (hashing reads it, and says only that it differs)."""
    if not isinstance(recorded, str) or not recorded or "\0" in recorded or \
            not isinstance(sha256, str):
        return None
    # a redacted report's path: with this machine's names put back, the one that matches
    for candidate in on_this_machine(recorded):
        path = Path(candidate)
        try:
            if path.is_file() and path.stat().st_size <= limit and \
                    _sha256_of(path) == sha256:
                return path
        except OSError:
            continue
    return None


def _export_afresh(data: dict[str, Any], failed_plans: list[str], target: Path,
                   contents: Contents) -> str | None:
    """The report's plans as recipes, written now; None, or why they could not be. A case
    or xclbin the report names is read only when it is the file the run used (sha256):
    the report may lie, and what it names otherwise is never read, nor quoted."""
    from harness.sources.load import parse_case
    from harness.sources.recipe_export import export_plans
    case_info = mapping(data.get("case"))
    if case_info.get("kind") not in (None, "case"):
        return f"a {case_info.get('kind')} report is XRT's own format already"
    shown = case_info.get("file")
    file = recorded_file(shown, case_info.get("sha256"), MAX_CASE_BYTES)
    if file is None:
        return (f"the case {shown} is not here as the run used it (missing, or its sha256 "
                "is not the one the report recorded); run `runlist-harness export` with it")
    try:
        case = parse_case(file.read_bytes(), str(file))
    except (HarnessError, OSError) as err:
        # the very file the run used (its sha256 says so): its own errors may be told
        return f"the case {shown} cannot be read here ({err})"
    plans = [(str(p.get("name")), list(p.get("chunks") or [])) for p in data.get("plans") or []
             if isinstance(p, dict) and not p.get("control")]
    if data.get("command") in ("bisect", "sweep"):
        # a search's plans run to thousands: the ones that failed say what to reproduce
        failed = set(failed_plans)
        plans = ([p for p in plans if p[0] in failed] or plans)[:MAX_SEARCH_RECIPES]
    header = read_header(data)
    xclbin = next((found for x in header.artifacts.xclbins
                   if x.get("role") == case.runlist_context
                   and (found := recorded_file(x.get("path"), x.get("sha256"),
                                               MAX_XCLBIN_BYTES)) is not None), None)
    flow = header.settings.flow or case.flow
    try:
        done = export_plans(case, plans, xclbin, False, flow, target)
    except (HarnessError, OSError) as err:
        return f"they could not be written ({err})"
    contents.xclbins_to_copy += done.missing
    return None


def _redacted_copy(reader: ReportReader, digest: Digest, target: Path) -> None:
    """The report with every identity replaced, in the harness's own layout (header, then
    one journal line per entry), written an entry at a time."""
    header = reader.read_header()
    with target.open("wb") as out:
        if reader.whole or not reader.journaled:
            whole = digest.redactor.data(reader.document())
            _not_garbled(whole)
            out.write(dump_yaml(whole).encode("utf-8"))
            return
        comment = "# xdna-runlist-harness report"
        if isinstance(header, dict) and is_simulated(read_header(header).backend.raw):
            comment += f": {source_tag(header['backend'])} stack, not hardware evidence"
        shown = digest.redactor.data({k: v for k, v in header.items() if k != JOURNAL[:-1]})
        _not_garbled(shown)
        out.write((comment + "\n" + dump_yaml(shown) + JOURNAL + "\n").encode("utf-8"))
        redactor = digest.redactor
        for _, raw in reader.journal_entries():
            if redactor.untouched(raw) and raw.startswith(b'{"'):
                # nothing in it to replace: the line as the harness wrote it
                out.write(b"- " + raw.rstrip(b"\r\n") + b"\n")
                continue
            entry = redactor.data(parse_entry("- " + raw.decode("utf-8")))
            kind = next(iter(entry))
            out.write(entry_line(kind, entry[kind]))


def _not_garbled(shown: Any) -> None:
    """The redacted report is still the report: its own fields hold no placeholder
    (`report check` refuses one that does)."""
    problems = garbled(shown) if isinstance(shown, dict) else []
    if problems:
        raise RedactionFault(f"the redacted report would be garbled ({problems[0]}); nothing "
                            "was written. This is a bug of the harness's redaction: please "
                            "report it")


def collect(report: Path, reader: ReportReader, digest: Digest, do_redact: bool,
            scratch: Path, *, archive: str | None = None) -> Contents:
    """Everything the bundle of `report` holds, from one pass's `digest` (made with its
    kernel log); `archive`: the bundle's file name, which its report.md names."""
    view = digest.view(do_redact)
    contents = Contents()
    contents.files[README] = b""                 # written last: it lists the rest
    contents.files[REPORT_MD] = b""
    shown = digest.redactor.text if do_redact else str
    member = shipped_name(report.name, shown)
    if do_redact:
        contents.files[member] = scratch / "report.yaml"
        _redacted_copy(reader, digest, scratch / "report.yaml")
    else:
        contents.files[member] = report
    if digest.has_kernel_log:
        log = scratch / KERNEL_LOG
        with log.open("w", encoding="utf-8") as out:
            out.writelines(map(escape_controls, digest.kernel_log_lines(do_redact)))
        contents.files[KERNEL_LOG] = log
    smi = [(f"xrt-smi {name}", run) for name, run in
           view.typed.environment.xrt_smi.items() if "output" in run]
    control = view.header.get("xrt_smi_control")
    if isinstance(control, dict) and "output" in control:
        smi.append((f"{control.get('command')} (the control: {control.get('result')})",
                    control))
    engine = section(view.header.get("engine_run"))
    if smi and not engine:
        contents.files[XRT_SMI] = escape_controls("\n".join(
            f"== {name} (exit {run.get('exit_status')})\n{run['output']}\n"
            for name, run in smi)).encode()
    if engine:                            # capture record's: its window, not trials' recipes
        from harness.report.engine_run_files import run_files
        found = run_files(report, engine, is_simulated(view.typed.backend.raw), shown,
                          _sha256_of)
        contents.files.update(found.files)
        contents.left_out += [LeftOut(name, why) for name, why in found.left_out]
    else:
        _recipes(report, digest, contents, scratch)
    top = archive or bundle_path(report, shown).name       # the file report.md names
    contents.files[REPORT_MD] = rendering.render_markdown(
        view, bundle=[shipped_name(top, shown), *contents.names()]).encode()
    contents.files[README] = escape_controls(
        _readme(view, member, contents, do_redact, shown)).encode()
    return contents


def _start_with(view: ReportView, data: dict[str, Any], contents: Contents) -> str:
    """Where a maintainer starts: the render, then the driver's lines where the bundle
    holds them (a run whose driver printed nothing has no kernel-log.txt)."""
    recorded = bool(section(data.get("engine_run")))
    start = ("" if recorded else f"{view.failed} failed trial(s). ") + \
        f"Start with `{REPORT_MD}` (what GitHub shows)"
    if KERNEL_LOG in contents.files:
        return start + f", then `{KERNEL_LOG}` for " + (
            "what the driver said over the recorded window." if recorded else
            "the driver's lines of every trial.")
    return start + ("; the driver printed nothing the report kept, so no kernel log is "
                    "included." if recorded or view.failed else ".")


def _readme(view: ReportView, member: str, contents: Contents, redacted: bool,
            shown: Callable[[str], str]) -> str:
    """The maintainer's README; `member`: the report's name in the bundle."""
    data, typed = view.header, view.typed
    answer, *reasons = verdict_lines(data.get("verdict"))
    command = rendering.command_line(typed)
    lines = [f"# {rendering.title(typed)}", ""]
    if not data.get("finished"):
        contents.unfinished_command = str(data.get("command") or "run")
        lines += [f"**Partial:** this run did not finish (it was stopped, or was still "
                  "running when this was made): the report holds only the trials it had, and "
                  f"no verdict. {finish_hint(contents.unfinished_command, member)}", ""]
    lines += [f"Verdict: {answer}", "", *[f"- {reason}" for reason in reasons],
             *([""] if reasons else []),
             f"Made by: {rendering.code_span(command)}", "",
             *([f"What ran: {captured}", ""] if (captured := captured_note(data)) else []),
             f"Harness: {rendering.harness_made_by(typed)}.", "",
             _start_with(view, data, contents), "",
             "## Files", "",
             f"- `{REPORT_MD}`: the report rendered for an issue",
             f"- `{member}`: a copy of the report"
             + (" (host name, user, home folders, serials and addresses replaced by "
                "placeholders)" if redacted else ""),
             ]
    if section(data.get("engine_run")):
        from harness.report.engine_run_files import readme_lines
        lines += readme_lines(list(contents.files))
    elif KERNEL_LOG in contents.files:
        lines.append(f"- `{KERNEL_LOG}`: the amdxdna and IOMMU kernel-log lines of each "
                     "trial" + (" (simulated lines, each marked SIMULATED)"
                                if is_simulated(typed.backend.raw) else ""))
    if XRT_SMI in contents.files:
        lines.append(f"- `{XRT_SMI}`: `xrt-smi` output from the machine")
    scripts = sorted(Path(name).name for name in contents.files
                     if name.startswith(RECIPES + "/") and Path(name).name.startswith("run_")
                     and name.endswith(".sh"))
    if scripts:
        lines.append(f"- `{RECIPES}/`: the plans as XRT run recipes, one `run_PLAN.sh` per "
                     "plan")
    if contents.left_out:
        # said with the paths the report names, so redacted as the report is
        lines += ["", "## Not included", ""] + [f"- {shown(str(item))}"
                                                for item in contents.left_out] + [""]
    if scripts:
        lines += ["", "## Reproduce without Python: XRT's own runner", "",
                  "With XRT installed, each script runs its plan's runlists with "
                  "`xrt-runner --recipe R --profile P`, in order:", "", "```sh",
                  "source /opt/xilinx/xrt/setup.sh", f"cd {RECIPES}",
                  *(f"sh {script}" for script in scripts), "```", ""]
        missing = _xclbins_to_copy(typed, contents)
        if missing:
            lines += [f"xclbins are named, not shipped: copy these into `{RECIPES}/` first: "
                      + "; ".join(missing) + ".", ""]
    commit, version = typed.harness.commit, typed.harness.version
    where = (f"its source at commit `{commit}`" if commit
             else f"its source of version {version} (the commit that wrote this report is "
                  "not recorded)")
    lines += ["## Reproduce with the harness", "",
              f"The harness is not on a package index: take {where}, and in that checkout "
              "(Python 3.10 or newer):", "", "```sh", "python3 -m pip install -e .", command,
              "```", ""]
    return "\n".join(lines)


def bundle_names(archive: Path) -> list[str] | None:
    """What a bundle on disk holds, as the render names it (top-level names, a folder once);
    None when there is no readable bundle there."""
    if not archive.is_file() or archive.is_symlink():
        return None
    names: list[str] = []
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                parts = member.name.split("/")
                if len(parts) < 2:
                    continue
                top = parts[1] + ("/" if len(parts) > 2 else "")
                if top not in names:
                    names.append(top)
    except (OSError, tarfile.TarError, EOFError):
        return None
    return names or None


def finish_hint(command: str, report_name: str) -> str:
    """How to finish a report a bundle was made of too early."""
    return (f"`{continue_command(command, report_name)}` finishes it; bundle it again "
            "then.")


def _xclbins_to_copy(header: ReportHeader, contents: Contents) -> list[str]:
    """The xclbins the recipes name and the bundle does not ship, each with the sha256 the
    report recorded for a file of that name (so the right file is copied in)."""
    artifacts = header.artifacts
    recorded = {Path(str(x.get("path"))).name: x for x in artifacts.xclbins if x.get("path")}
    pack = str(artifacts.pack_name or "the pack")
    names = [*header.exports_missing, *contents.xclbins_to_copy]
    names += [item.name.removeprefix(f"{RECIPES}/") for item in contents.left_out
              if item.xclbin]
    out = []
    for name in dict.fromkeys(map(str, names)):
        entry = recorded.get(name) or {}
        if entry.get("synthetic"):
            # its hash names a file no one else has: say where the real one comes from
            out.append(f"`{name}`: the run used a synthesized stand-in (the kernel's "
                       f"signature, not the real kernel), so there is no file to copy by its "
                       f"hash; take {pack}'s own `{name}` from {real_source(pack)}")
        else:
            out.append(f"`{name}`" + (f" (sha256 {entry['sha256']})"
                                      if entry.get("sha256") else ""))
    return out


def real_source(pack: str) -> str:
    """Where a pack's real xclbins come from (STACK.md 5 for FastFlowLM's, STACK.md 7 for
    XRT's validate suite)."""
    if pack == "xrt-validate":
        return "an XRT install (validate.xclbin in its xrt_smi_*.a archive)"
    return (f"FastFlowLM (its xclbins folder for the model: `$FLM_XCLBIN_PATH`, "
            f"`xclbins/{pack}/` beside the `flm` binary, or `share/flm/xclbins/{pack}/`)")


def render_for_issue(report: Path, digest: Digest, do_redact: bool) -> str:
    """The Markdown render of `report`: it names the bundle beside the report and what it
    holds once that bundle exists, and says how to make it until then."""
    shown = digest.redactor.text if do_redact else str
    archive = bundle_path(report, shown)
    names = bundle_names(archive)
    return rendering.render_markdown(digest.view(do_redact),
                                     bundle=[archive.name, *names] if names else None,
                                     report_name=shown(report.name))


SCRATCH_PREFIX = "harness-bundle-"
NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def write_bundle(report: Path, reader: ReportReader, digest: Digest, out: Path | None = None,
                 *, do_redact: bool = True, force: bool = False) -> tuple[Path, Contents]:
    """Write the bundle atomically; an existing file is replaced only with `force`, and
    never the report itself. Its parts are made in a scratch folder of the temporary
    folder, which a killed bundle leaves to the next to remove (`harness.formats.scratch`)."""
    shown = digest.redactor.text if do_redact else str
    target = out or bundle_path(report, shown)
    if _same_file(target, report):
        raise BadInput(f"--out {target} is the report itself: the bundle would replace it; "
                       "choose another name (default: REPORT.bundle.tar.gz)")
    if target.exists() and not force:
        raise BadInput(f"{target} exists; pass --force to replace it, or --out another name")
    top = top_folder(target, report, shown)
    now = int(time.time())
    scratch = make_owned(SCRATCH_PREFIX)
    contents = Contents()
    writing = scratch
    try:
        contents = collect(report, reader, digest, do_redact, scratch, archive=target.name)
        writing = target
        try:
            with atomic_file(target, overwrite=force) as handle, \
                    tarfile.open(fileobj=handle, mode="w:gz", compresslevel=6) as tar:
                for name, held in contents.files.items():
                    info = tarfile.TarInfo(member_name(top, name))
                    info.mtime, info.mode = now, 0o644
                    if isinstance(held, Path):
                        # never through a link planted after the folder was listed
                        with os.fdopen(os.open(held, os.O_RDONLY | os.O_NOFOLLOW),
                                       "rb") as source:
                            info.size = _size(source)
                            tar.addfile(info, source)
                    else:
                        info.size = len(held)
                        tar.addfile(info, io.BytesIO(held))
        except FileExistsError:
            raise BadInput(f"{target} was created by someone else meanwhile; not replacing "
                           "it (pass --force to)") from None
    except OSError as err:
        if err.errno not in NO_SPACE:
            raise
        raise _no_space(err, writing, target, contents) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target, contents


def _same_file(target: Path, report: Path) -> bool:
    try:
        return os.path.samefile(target, report)
    except OSError:
        return os.path.realpath(target) == os.path.realpath(report)


def _no_space(err: OSError, writing: Path, target: Path, contents: Contents) -> HarnessError:
    """A full disk (or quota, or file-size limit) said with the file being written, what
    the bundle's parts come to and what is free there."""
    parts = sum(held.stat().st_size if isinstance(held, Path) and held.exists()
                else len(held) if isinstance(held, bytes) else 0
                for held in contents.files.values())
    folder = writing if writing.is_dir() else writing.parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        free = 0
    what = ("its scratch copy in " + str(writing) + " (TMPDIR)" if writing != target
            else str(target))
    need = (f"its parts come to {_mib(parts)} before compression, " if parts else "") + \
        f"{_mib(free)} free there"
    return EnvironmentNotReady(
        f"no space to write the bundle {target}: writing {what} failed "
        f"({os.strerror(err.errno or errno.ENOSPC)}); {need}. Free space there, or choose "
        "--out (or TMPDIR, for the scratch copy) on a disk with room")


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"


def top_folder(target: Path, report: Path, shown: Callable[[str], str] = str) -> str:
    """The one folder every member lies in: the archive's name less its suffix, or, when
    that is no plain name (`--out ".tar.gz"`, `--out "...tar.gz"`), the report's; either
    as `shown` (redacted)."""
    for candidate in (shipped_name(target.name.removesuffix(".tar.gz").removesuffix(".tgz"),
                                   shown),
                      bundle_path(report, shown).name.removesuffix(".tar.gz")):
        if _plain_name(candidate):
            return candidate
    return "bundle"


def _plain_name(name: str) -> bool:
    return bool(name) and name.strip(".") != "" and "/" not in name and "\\" not in name \
        and "\0" not in name and not name.startswith("-")


def member_name(top: str, name: str) -> str:
    """`top/name`, refused (a bug, never written) unless every part is a plain name: no
    member of a bundle may be absolute or climb out with `..` when it is unpacked."""
    parts = [top, *name.split("/")]
    if not all(part and part not in (".", "..") and "\0" not in part and "\\" not in part
               for part in parts) or not _plain_name(top):
        raise ValueError(f"not a member name for a bundle: {top}/{name}")
    return "/".join(parts)


def _size(source: Any) -> int:
    """A file's size as it is now, read through the handle that will copy it (a report
    still being appended to is copied up to here)."""
    size = source.seek(0, 2)
    source.seek(0)
    return size

