"""One `.tar.gz` to attach to an upstream issue (GitHub attaches files, not folders).

It holds, under one top folder: a README for the maintainer, the rendered report, the
report itself (redacted by default), every trial's kernel-log lines, `xrt-smi`'s output
when the report has it, and the plans as XRT run recipes (from REPORT.recipes/ beside
the report, else written afresh). It ships nothing from outside the report's folder:
symlinks are not followed, xclbins (FastFlowLM's binaries) are named with their sha256
instead of included.

A report of any size bundles in flat memory: what the bundle holds is written to a
scratch folder a part at a time (the redacted report an entry at a time), and the
archive is written beside its target and renamed into place once whole.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.formats.yamlio import atomic_file, dump_yaml
from harness.model.errors import BadInput, HarnessError
from harness.report import render as rendering
from harness.report.digest import Digest, ReportView
from harness.report.fileformat import entry_line
from harness.report.model import JOURNAL, is_simulated, source_tag
from harness.report.reader import ReportReader, parse_entry

README = "README.md"
REPORT_MD = "report.md"
KERNEL_LOG = "kernel-log.txt"
XRT_SMI = "xrt-smi.txt"
RECIPES = "recipes"
NOT_SHIPPED = (".xclbin",)
MAX_SEARCH_RECIPES = 8


@dataclass
class Contents:
    """What goes in: name inside the top folder -> its bytes, or a file holding them; what
    was left out and why."""

    files: dict[str, bytes | Path] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)

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


def bundle_path(report: Path) -> Path:
    return report.with_name(report.stem + ".bundle.tar.gz")


def _recipes(report: Path, view: ReportView, contents: Contents, scratch: Path) -> None:
    data = view.header
    folder = report.with_name(report.stem + ".recipes")
    exports = data.get("exports") or {}
    named = Path(exports["folder"]) if exports.get("folder") else None
    # only a folder beside the report: a report's own word cannot send us elsewhere
    if named is not None and named.parent.resolve() == report.parent.resolve():
        folder = named
    if folder.is_dir() and not folder.is_symlink():
        _take_folder(folder, contents)
        return
    target = scratch / "recipes"
    why = _export_afresh(view, target)
    if why:
        contents.left_out.append(f"recipes: {why}")
        return
    _take_folder(target, contents)


def _take_folder(folder: Path, contents: Contents) -> None:
    root = folder.resolve()
    for path in sorted(folder.rglob("*")):
        name = f"{RECIPES}/{path.relative_to(folder).as_posix()}"
        if path.is_symlink():
            contents.left_out.append(f"{name}: a symlink (not followed)")
            continue
        if not path.is_file() or root not in path.resolve().parents:
            continue
        if path.suffix in NOT_SHIPPED:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            contents.left_out.append(f"{name}: an xclbin, not shipped (sha256 {digest}); "
                                     "put your pack's copy there")
            continue
        contents.files[name] = path.read_bytes()


def _export_afresh(view: ReportView, target: Path) -> str | None:
    """The report's plans as recipes, written now; None, or why they could not be."""
    from harness.sources.load import load_case
    from harness.sources.recipe import export_plans
    data = view.header
    case_info = data.get("case") or {}
    if case_info.get("kind") not in (None, "case"):
        return f"a {case_info.get('kind')} report is XRT's own format already"
    try:
        case = load_case(case_info.get("file") or "")
    except HarnessError as err:
        return f"the case {case_info.get('file')} cannot be read here ({err})"
    plans = [(str(p.get("name")), list(p.get("chunks") or [])) for p in data.get("plans") or []
             if not p.get("control")]
    if data.get("command") in ("bisect", "sweep"):
        # a search's plans run to thousands: the ones that failed say what to reproduce
        failed = set(view.failed_plans)
        plans = ([p for p in plans if p[0] in failed] or plans)[:MAX_SEARCH_RECIPES]
    xclbin = next((Path(x["path"]) for x in (data.get("artifacts") or {}).get("xclbins") or []
                   if x.get("role") == case.runlist_context and x.get("path")
                   and Path(x["path"]).is_file()), None)
    flow = (data.get("settings") or {}).get("flow") or case.flow
    try:
        export_plans(case, plans, xclbin, False, flow, target)
    except HarnessError as err:
        return f"they could not be written ({err})"
    return None


def _redacted_copy(reader: ReportReader, digest: Digest, target: Path) -> None:
    """The report with every identity replaced, in the harness's own layout (header, then
    one journal line per entry), written an entry at a time."""
    header = reader.read_header()
    with target.open("wb") as out:
        if reader.whole or not reader.journaled:
            out.write(dump_yaml(digest.redactor.data(reader.document())).encode("utf-8"))
            return
        comment = "# xdna-runlist-harness report"
        if isinstance(header, dict) and is_simulated(header.get("backend") or {}):
            comment += f": {source_tag(header['backend'])} stack, not hardware evidence"
        shown = digest.redactor.data({k: v for k, v in header.items() if k != JOURNAL[:-1]})
        out.write((comment + "\n" + dump_yaml(shown) + JOURNAL + "\n").encode("utf-8"))
        for _, raw in reader.journal_entries():
            entry = digest.redactor.data(parse_entry("- " + raw.decode("utf-8")))
            kind = next(iter(entry))
            out.write(entry_line(kind, entry[kind]))


def collect(report: Path, reader: ReportReader, digest: Digest, do_redact: bool,
            scratch: Path, *, names_only: bool = False) -> Contents:
    """Everything the bundle of `report` holds, from one pass's `digest` (made with its
    kernel log). `names_only`: report.md in full, the rest only named (a render names the
    bundle's files; it need not write a big report once more)."""
    view = digest.view(do_redact)
    contents = Contents()
    contents.files[README] = b""                 # written last: it lists the rest
    contents.files[REPORT_MD] = b""
    if names_only:
        contents.files[report.name] = b""
    elif do_redact:
        contents.files[report.name] = scratch / "report.yaml"
        _redacted_copy(reader, digest, scratch / "report.yaml")
    else:
        contents.files[report.name] = report
    if digest.has_kernel_log:
        log = scratch / KERNEL_LOG
        if not names_only:
            with log.open("w", encoding="utf-8") as out:
                out.writelines(digest.kernel_log_lines(do_redact))
        contents.files[KERNEL_LOG] = log if not names_only else b""
    env = view.header.get("environment") or {}
    smi = [(name, run) for name, run in (env.get("xrt_smi") or {}).items()
           if isinstance(run, dict) and "output" in run]
    if smi:
        contents.files[XRT_SMI] = "\n".join(
            f"== xrt-smi {name} (exit {run.get('exit_status')})\n{run['output']}\n"
            for name, run in smi).encode()
    _recipes(report, view, contents, scratch)
    top = bundle_path(report).name
    contents.files[REPORT_MD] = rendering.render_markdown(
        view, bundle=[top, *contents.names()]).encode()
    contents.files[README] = _readme(view, report, contents, do_redact).encode()
    return contents


def _readme(view: ReportView, report: Path, contents: Contents, redacted: bool) -> str:
    data = view.header
    verdict = (data.get("verdict") or {}).get("text") or "no verdict (the run did not finish)"
    lines = [f"# {rendering.title(data)}", "",
             f"Verdict: {verdict}", "",
             f"Made by: `{rendering.command_line(data)}`", "",
             f"{view.failed} failed trial(s). Start with `{REPORT_MD}` (what GitHub shows), "
             f"then `{KERNEL_LOG}` for the driver's lines of every trial.", "",
             "## Files", "",
             f"- `{REPORT_MD}`: the report rendered for an issue",
             f"- `{report.name}`: the report itself"
             + (" (host name, user, home folders, serials and addresses replaced by "
                "placeholders)" if redacted else ""),
             ]
    if KERNEL_LOG in contents.files:
        lines.append(f"- `{KERNEL_LOG}`: the amdxdna and IOMMU kernel-log lines of each "
                     "trial")
    if XRT_SMI in contents.files:
        lines.append(f"- `{XRT_SMI}`: `xrt-smi` output from the machine")
    if any(name.startswith(RECIPES + "/") for name in contents.files):
        lines.append(f"- `{RECIPES}/`: the plans as XRT run recipes; with XRT installed: "
                     f"`source /opt/xilinx/xrt/setup.sh && cd {RECIPES} && sh run_PLAN.sh`")
    if contents.left_out:
        lines += ["", "## Not included", ""] + [f"- {item}" for item in contents.left_out]
    lines += ["", "## Reproduce", "",
              "With the harness installed (`pip install xdna-runlist-harness`, or from its "
              "repository):", "", "```sh", rendering.command_line(data).split(" (")[0], "```",
              ""]
    return "\n".join(lines)


def render_with_bundle(report: Path, reader: ReportReader, digest: Digest,
                       do_redact: bool) -> str:
    """report.md as the bundle would hold it: the render that names the bundle's files."""
    with tempfile.TemporaryDirectory(prefix="harness-bundle-") as scratch:
        contents = collect(report, reader, digest, do_redact, Path(scratch), names_only=True)
        return contents.text(REPORT_MD)


def write_bundle(report: Path, reader: ReportReader, digest: Digest, out: Path | None = None,
                 *, do_redact: bool = True, force: bool = False) -> tuple[Path, Contents]:
    """Write the bundle atomically; an existing file is replaced only with `force`."""
    target = out or bundle_path(report)
    if target.exists() and not force:
        raise BadInput(f"{target} exists; pass --force to replace it, or --out another name")
    top = target.name.removesuffix(".tar.gz").removesuffix(".tgz")
    now = int(time.time())
    with tempfile.TemporaryDirectory(prefix="harness-bundle-") as scratch:
        contents = collect(report, reader, digest, do_redact, Path(scratch))
        try:
            with atomic_file(target, overwrite=force) as handle, \
                    tarfile.open(fileobj=handle, mode="w:gz") as tar:
                for name, held in contents.files.items():
                    info = tarfile.TarInfo(f"{top}/{name}")
                    info.mtime, info.mode = now, 0o644
                    if isinstance(held, Path):
                        with held.open("rb") as source:
                            info.size = _size(source)
                            tar.addfile(info, source)
                    else:
                        info.size = len(held)
                        tar.addfile(info, io.BytesIO(held))
        except FileExistsError:
            raise BadInput(f"{target} was created by someone else meanwhile; not replacing "
                           "it (pass --force to)") from None
    return target, contents


def _size(source: Any) -> int:
    """A file's size as it is now, read through the handle that will copy it (a report
    still being appended to is copied up to here)."""
    size = source.seek(0, 2)
    source.seek(0)
    return size

