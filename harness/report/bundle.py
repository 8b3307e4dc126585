"""One `.tar.gz` to attach to an upstream issue (GitHub attaches files, not folders).

It holds, under one top folder: a README for the maintainer, the rendered report, the
report itself (redacted by default), every trial's kernel-log lines, `xrt-smi`'s output
when the report has it, and the plans as XRT run recipes (from REPORT.recipes/ beside
the report, else written afresh). It ships nothing from outside the report's folder:
symlinks are not followed, xclbins (FastFlowLM's binaries) are named with their sha256
instead of included.
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

from harness.formats.yamlio import dump_yaml, write_atomic
from harness.model.errors import BadInput, HarnessError
from harness.report import render as rendering
from harness.report.evidence import failed_trials
from harness.report.fileformat import load_report
from harness.report.redact import redact

README = "README.md"
REPORT_MD = "report.md"
KERNEL_LOG = "kernel-log.txt"
XRT_SMI = "xrt-smi.txt"
RECIPES = "recipes"
NOT_SHIPPED = (".xclbin",)
MAX_SEARCH_RECIPES = 8


@dataclass
class Contents:
    """What goes in: name inside the top folder -> bytes; what was left out and why."""

    files: dict[str, bytes] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)

    def names(self) -> list[str]:
        """Top-level names, a folder once (``recipes/``)."""
        seen: list[str] = []
        for name in self.files:
            top = name.split("/", 1)[0] + ("/" if "/" in name else "")
            if top not in seen:
                seen.append(top)
        return seen


def bundle_path(report: Path) -> Path:
    return report.with_name(report.stem + ".bundle.tar.gz")


def kernel_log_text(data: dict[str, Any]) -> str:
    """Every trial's kept kernel-log lines, each trial under a header."""
    out = []
    for plan in data.get("plans") or []:
        for trial in plan.get("trials") or []:
            log = trial.get("kernel_log") if isinstance(trial, dict) else None
            if not log:
                continue
            out.append(f"== plan {plan.get('name')} trial {int(trial.get('index') or 0) + 1} "
                       f"({trial.get('status')}), from {log.get('source')}")
            if "unreadable" in log:
                out.append(f"(not readable: {log['unreadable']}; fix: {log.get('fix')})")
            out += log.get("lines") or ["(the driver printed nothing)"]
            if log.get("omitted"):
                out.append(f"({log['omitted']} lines between were not kept)")
            out.append("")
    return "\n".join(out)


def _recipes(report: Path, data: dict[str, Any], contents: Contents) -> None:
    folder = report.with_name(report.stem + ".recipes")
    exports = data.get("exports") or {}
    named = Path(exports["folder"]) if exports.get("folder") else None
    # only a folder beside the report: a report's own word cannot send us elsewhere
    if named is not None and named.parent.resolve() == report.parent.resolve():
        folder = named
    if folder.is_dir() and not folder.is_symlink():
        _take_folder(folder, contents)
        return
    with tempfile.TemporaryDirectory(prefix="harness-bundle-") as scratch:
        target = Path(scratch) / "recipes"
        why = _export_afresh(data, target)
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


def _export_afresh(data: dict[str, Any], target: Path) -> str | None:
    """The report's plans as recipes, written now; None, or why they could not be."""
    from harness.sources.load import load_case
    from harness.sources.recipe import export_plans
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
        failed = {name for name, _ in failed_trials(data)}
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


def collect(report: Path, do_redact: bool = True, data: dict[str, Any] | None = None,
            *, names_only: bool = False) -> Contents:
    """Everything the bundle of `report` holds (`data`: the report as loaded, when the
    caller has it already). `names_only`: report.md in full, the report's own copy left
    empty (a render names the bundle's files; it need not dump a big report once more)."""
    data = load_report(str(report)).to_dict() if data is None else data
    shown = redact(data) if do_redact else data
    contents = Contents()
    contents.files[README] = b""                 # written last: it lists the rest
    contents.files[REPORT_MD] = b""
    contents.files[report.name] = b"" if names_only else (
        dump_yaml(shown) if do_redact else report.read_text(encoding="utf-8")).encode()
    log = kernel_log_text(shown)
    if log:
        contents.files[KERNEL_LOG] = log.encode()
    smi = [(name, run) for name, run in ((shown.get("environment") or {}).get("xrt_smi")
                                         or {}).items()
           if isinstance(run, dict) and "output" in run]
    if smi:
        contents.files[XRT_SMI] = "\n".join(
            f"== xrt-smi {name} (exit {run.get('exit_status')})\n{run['output']}\n"
            for name, run in smi).encode()
    _recipes(report, data, contents)
    top = bundle_path(report).name
    contents.files[REPORT_MD] = rendering.render_markdown(
        shown, bundle=[top, *contents.names()]).encode()
    contents.files[README] = _readme(shown, report, contents, do_redact).encode()
    return contents


def _readme(data: dict[str, Any], report: Path, contents: Contents, redacted: bool) -> str:
    verdict = (data.get("verdict") or {}).get("text") or "no verdict (the run did not finish)"
    failures = len(list(failed_trials(data)))
    lines = [f"# {rendering.title(data)}", "",
             f"Verdict: {verdict}", "",
             f"Made by: `{rendering.command_line(data)}`", "",
             f"{failures} failed trial(s). Start with `{REPORT_MD}` (what GitHub shows), then "
             f"`{KERNEL_LOG}` for the driver's lines of every trial.", "",
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


def write_bundle(report: Path, out: Path | None = None, *, do_redact: bool = True,
                 force: bool = False) -> tuple[Path, Contents]:
    """Write the bundle atomically; an existing file is replaced only with `force`."""
    target = out or bundle_path(report)
    if target.exists() and not force:
        raise BadInput(f"{target} exists; pass --force to replace it, or --out another name")
    contents = collect(report, do_redact)
    top = target.name.removesuffix(".tar.gz").removesuffix(".tgz")
    buffer = io.BytesIO()
    now = int(time.time())
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in contents.files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mtime, info.mode = len(data), now, 0o644
            tar.addfile(info, io.BytesIO(data))
    write_atomic(target, buffer.getvalue(), overwrite=force)
    return target, contents
