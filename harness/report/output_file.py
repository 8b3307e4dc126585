"""Where a report may be written: a path a user gave (--out) is checked before anything
runs, its folder made at most one folder deep (`harness.formats.output_paths`), an existing
file replaced only with --force and only when it is a report, and a name that promises
another format refused."""

from __future__ import annotations

import re
import stat
from pathlib import Path

from harness.formats.output_paths import Replaceable, check_folder
from harness.model.errors import BadInput

# a report names its schema in its header, which starts the file (a YAML tool that rewrote
# it may have moved the key, and quoted it)
_SCHEMA_KEY = re.compile(rb'^["\']?schema["\']?:\s*["\']?xdna-runlist-harness/report/',
                         re.MULTILINE)
REPORT_FILE = Replaceable("a report of the harness",
                          lambda head: _SCHEMA_KEY.search(head) is not None)


def check_output_path(path: Path, *, force: bool, what: str = "--out",
                      replaces: Replaceable = REPORT_FILE) -> None:
    """Refuse, before anything runs, an output that is not a file we may (re)place: one
    whose folder would take more than one folder made (`harness.formats.output_paths`),
    one that is there without --force, or with it one that is not of `replaces`' kind."""
    check_folder(path.parent, path=path, what=what)
    try:
        st = path.stat()
    except FileNotFoundError:
        st = None
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            kind = ("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO"
                    if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode)
                    or stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                    else "not a regular file")
            raise BadInput(f"{what} {path} is {kind}; refusing to replace it, even with --force")
        if not force:
            raise BadInput(f"{what} {path} exists; choose another or pass --force to replace it")
        refusal = replaces.refusal(path, what)
        if refusal:
            raise BadInput(refusal)


# suffixes that promise another format than the YAML a report is written in
OTHER_FORMATS = {".json": "JSON", ".md": "Markdown", ".markdown": "Markdown", ".txt": "text",
                 ".html": "HTML", ".csv": "CSV", ".xml": "XML", ".toml": "TOML",
                 ".gz": "a compressed file", ".tgz": "a compressed file", ".tar": "a tar file",
                 ".zip": "a zip file", ".png": "an image"}


def check_report_name(path: Path, what: str = "--out") -> None:
    """Refuse, before anything runs, a report file named for another format: the report is
    YAML whatever it is called, so `--out rep.json` would hold YAML."""
    other = OTHER_FORMATS.get(path.suffix.lower())
    if other:
        raise BadInput(f"{what} {path}: a report is written as YAML, not {other}; name it "
                       f"{path.with_suffix('.yaml')} (`report render` gives Markdown or text, "
                       "--json prints the report as JSON)")
