"""The plans as XRT run recipes in a bundle: REPORT.recipes/ beside the report when it is
there, else written afresh from the case the run used.

Of REPORT.recipes/, the bundle ships what the export wrote (the files its README lists,
with the sha256 listed): a file of anyone else's put beside them is named, not shipped.
Every text of it (the README, the run scripts, the recipes and replay scripts) is
redacted as the report is, and its README's list says what is shipped; file names holding
a private name are shipped under the placeholder (`file_safe`). A buffer's data
(`data_NAME.bin`: a recipe's or capture's buffer as its program filled it, which holds
what that program was given, the prompt among it, in whatever form it encodes it) is
left out, named with its size and sha256, unless the user asks for it (`with_buffers`).

A header is text anyone can edit: its `exports.folder` naming another folder is said, not
read, and the case and xclbin written afresh from are read only when their sha256 is the
one the report recorded (`recorded_file`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.formats.printable import escape_controls
from harness.model.errors import HarnessError
from harness.report.bundle_contents import RECIPES, Contents, LeftOut, sha256_of
from harness.report.digest import Digest
from harness.report.header import read_header
from harness.report.model import mapping
from harness.report.placeholders import file_safe
from harness.report.recorded_paths import fits, on_this_machine

NOT_SHIPPED = (".xclbin",)
TEXT_SUFFIXES = (".md", ".sh", ".json", ".txt")
MAX_SEARCH_RECIPES = 8
MAX_CASE_BYTES = 16 << 20       # a case is a page of YAML; a bigger "case" is not one
MAX_XCLBIN_BYTES = 1 << 30
MAX_TEXT_BYTES = 256 << 20      # a text of the recipes redacted in memory, at most
SHIPPED = "recipes-shipped"     # the redacted copies, in the bundle's scratch folder


def add_recipes(report: Path, digest: Digest, contents: Contents, scratch: Path,
                shown: Callable[[str], str], with_buffers: bool) -> None:
    """The plans as recipes into `contents`: REPORT.recipes/ beside the report when it is
    one an export wrote, else written afresh from the case. Paths are read as the report
    recorded them (redaction changes what is written, never where it is read from)."""
    from harness.sources.export_owned import listed_files
    data = digest.document
    # Only the folder named after the report itself: a header is text anyone can edit, and
    # its `exports.folder` naming ~/.ssh or another folder beside the report must not
    # make us ship what is in there.
    folder = report.with_name(report.stem + ".recipes")
    named = mapping(data.get("exports")).get("folder")
    if named and not (isinstance(named, str) and _names_folder(named, folder)):
        contents.left_out.append(LeftOut(str(named), "the report names it as its recipes "
                                         f"folder; only {folder.name}/ beside the report is "
                                         "read"))
    if folder.is_dir() and not folder.is_symlink():
        # without an export's README, none of its files can be told from anyone else's:
        # each is named, none shipped
        _take_export(folder, listed_files(folder, strict=False) or {}, contents, scratch,
                     shown, with_buffers)
        return
    target = scratch / RECIPES
    why = _export_afresh(data, digest.failed_plans, target, contents)
    if why:
        contents.left_out.append(LeftOut(RECIPES, why))
        return
    _take_export(target, listed_files(target) or {}, contents, scratch, shown, with_buffers)


def _names_folder(named: str, folder: Path) -> bool:
    """Whether the report's `exports.folder` (as a redacted report may hold it, with
    placeholders) is `folder`."""
    recorded = Path(named)
    if not fits(recorded.name, folder.name):
        return False
    here = os.path.realpath(folder.parent)
    return any(os.path.realpath(candidate) == here
               for candidate in on_this_machine(os.path.abspath(recorded.parent)))


def _take_export(folder: Path, listed: dict[str, tuple[int, str]], contents: Contents,
                 scratch: Path, shown: Callable[[str], str], with_buffers: bool) -> None:
    """The files of an export folder the export wrote, texts redacted; what else is there
    is named, not shipped."""
    from harness.sources.export_owned import README, relisted
    from harness.sources.recipe_export import DATA_PREFIX
    root = folder.resolve()
    out = scratch / SHIPPED
    out.mkdir(exist_ok=True)
    members: dict[str, str] = {}                    # listed name -> the name it ships as
    texts: list[Path] = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        name = f"{RECIPES}/{shipped(relative, shown)}"
        if path.is_symlink():
            contents.left_out.append(LeftOut(name, "a symlink (not followed)",
                                             xclbin=path.suffix in NOT_SHIPPED))
            continue
        if not path.is_file() or root not in path.resolve().parents:
            continue
        if path.suffix in NOT_SHIPPED:
            contents.left_out.append(LeftOut(name, f"an xclbin, not shipped (sha256 "
                                             f"{sha256_of(path)}); put your pack's copy "
                                             "there", xclbin=True))
            continue
        if relative == README:
            continue                                 # last: it lists what is shipped
        recorded = listed.get(relative)
        if recorded is None or path.stat().st_size != recorded[0] or \
                sha256_of(path) != recorded[1]:
            contents.left_out.append(LeftOut(name, "not a file the export wrote (its "
                                             "README.md does not list it with this sha256); "
                                             "attach it yourself if it belongs"))
            continue
        if path.name.startswith(DATA_PREFIX) and path.suffix == ".bin" and not with_buffers:
            contents.left_out.append(LeftOut(name, buffer_left_out(path)))
            contents.buffers_left_out += 1
            continue
        members[relative] = name
        contents.buffers_shipped += path.name.startswith(DATA_PREFIX) and path.suffix == ".bin"
        if path.suffix in TEXT_SUFFIXES and path.stat().st_size <= MAX_TEXT_BYTES:
            texts.append(path)
        else:
            contents.files[name] = path
    renamed = {shown(listed_name): member.removeprefix(f"{RECIPES}/")
               for listed_name, member in members.items()
               if shown(listed_name) != member.removeprefix(f"{RECIPES}/")}
    relist: dict[str, tuple[str, bytes]] = {}
    for path in texts:
        relative = path.relative_to(folder).as_posix()
        data = redacted_text(path.read_bytes(), shown, renamed)
        target = out / file_safe(members[relative].replace("/", "_"))
        target.write_bytes(data)
        contents.files[members[relative]] = target
        relist[relative] = (members[relative].removeprefix(f"{RECIPES}/"), data)
    for relative, member in members.items():
        if relative not in relist:
            relist[relative] = (member.removeprefix(f"{RECIPES}/"),
                                (folder / relative).read_bytes())
    readme = folder / README
    if readme.is_file() and not readme.is_symlink():
        text = relisted(readme.read_text("utf-8", "replace"), relist)
        target = out / README
        target.write_bytes(redacted_text(text.encode(), shown, renamed))
        contents.files[f"{RECIPES}/{README}"] = target


def shipped(name: str, shown: Callable[[str], str]) -> str:
    """A file's name as the bundle ships it: redacted, and safe as a file name."""
    return file_safe(shown(name))


def redacted_text(data: bytes, shown: Callable[[str], str],
                  renamed: dict[str, str]) -> bytes:
    """A text of the recipes redacted line by line, the files it names that ship under
    another name (`renamed`: as the redaction writes the name -> as the file is called)
    named as shipped."""
    lines = data.decode("utf-8", "replace").split("\n")
    text = "\n".join(escape_controls(shown(line)) for line in lines)
    for written, member in renamed.items():
        text = text.replace(written, member)
    return text.encode("utf-8")


def buffer_left_out(path: Path) -> str:
    """Why a buffer's data is not shipped, with what identifies it."""
    return (f"{path.stat().st_size} bytes of a buffer's data as the program filled it "
            f"(sha256 {sha256_of(path)}): it may hold what the program was given, the "
            "prompt among it, so it is not shipped unless asked (`report bundle "
            "--with-buffers`)")


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
                    sha256_of(path) == sha256:
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
