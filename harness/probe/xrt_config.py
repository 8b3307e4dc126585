"""XRT's own settings as XRT reads them: what turns its capture on, and where it writes.

Read from Xilinx/XRT `src/runtime_src/core/common/config_reader.cpp` and
`config_reader.h` at 49612fa3 (2.26, the commit amd/xdna-driver 856409ca pins; the same
on master):

- a setting comes from the environment variable of its own name (`Runtime.capture_frames`)
  when that is set and not empty, else from the one `xrt.ini` XRT reads, else its default;
- that `xrt.ini` is the first of: the file `XRT_INI_PATH` names, the one
  `SDACCEL_INI_PATH` names (each only when it exists), `xrt.ini` (or `sdaccel.ini`) in the
  folder of the executable (`/proc/self/exe`: for a Python program, the interpreter's), and
  `xrt.ini` (or `sdaccel.ini`) in the current folder. Run as root (euid 0) XRT skips the
  two variables and the current folder (SWSPLAT-39875, XRT 5264d12908, in 2.26): as root
  only the environment and an `xrt.ini` beside the executable turn a capture on;
- the file is read as Boost's `read_ini` reads it: `[Section]` headers, `key = value`
  lines, `;` and `#` comments (a section twice, or a key twice in one, is refused); a
  file it cannot parse counts as empty (XRT prints `[XRT] Failed to read xrt.ini: ...`,
  once for each of its libraries that reads a setting: not played);
- `Runtime.capture_frames` (default 0: no capture) is read as an unsigned int
  (`std::stoul` for the variable: leading digits, a text that has none falls back to the
  file); `Runtime.capture_output_dir` defaults to `./`.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

CAPTURE_FRAMES = "Runtime.capture_frames"
CAPTURE_DIR = "Runtime.capture_output_dir"
DEFAULT_CAPTURE_DIR = "./"
INI_NAMES = ("xrt.ini", "sdaccel.ini")
INI_PATH_VARIABLES = ("XRT_INI_PATH", "SDACCEL_INI_PATH")
_LEADING_NUMBER = re.compile(r"\s*([+-]?)(\d+)")
_C_SPACE = " \t\n\v\f\r"              # isspace in the C locale: what Boost's trim removes


@dataclass(frozen=True)
class XrtConfig:
    """What XRT would read in a process started with this environment, as this user, from
    this executable and folder: the environment, and the xrt.ini it finds (its path and
    its values, `Section.key` -> text, or why it could not read it)."""

    environ: dict[str, str]
    ini_path: Path | None = None
    ini: dict[str, str] = field(default_factory=dict)
    ini_error: str | None = None

    def text(self, key: str, default: str) -> str:
        """config_reader `get_string_value`: the variable, else the file (a value in double
        quotes loses them), else the default."""
        value = self.environ.get(key, "")
        if value:
            return value
        value = self.ini.get(key, default)
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        return value

    def unsigned(self, key: str, default: int) -> int:
        """config_reader `get_uint_value`: the variable as `std::stoul` reads it (cast to an
        unsigned int), else the file's value, else the default."""
        value = self.environ.get(key, "")
        if value:
            match = _LEADING_NUMBER.match(value)
            if match:
                number = int(match.group(2)) * (-1 if match.group(1) == "-" else 1)
                return number % 2**32
        text = self.ini.get(key)
        if text is None or not text.strip().isdigit():
            return default
        return int(text.strip()) % 2**32

    @property
    def capture_frames(self) -> int:
        return self.unsigned(CAPTURE_FRAMES, 0)

    @property
    def capture_dir(self) -> str:
        return self.text(CAPTURE_DIR, DEFAULT_CAPTURE_DIR)

    @property
    def capturing(self) -> bool:
        return self.capture_frames > 0


def ini_path(environ: dict[str, str], *, euid: int, exe_dir: Path, cwd: Path) -> Path | None:
    """The xrt.ini XRT reads (config_reader.cpp `get_ini_path`), or None."""
    root = euid == 0
    if not root:
        for variable in INI_PATH_VARIABLES:
            named = environ.get(variable, "")
            if named and Path(named).exists():
                return Path(named)
    folders = [exe_dir] if root else [exe_dir, cwd]
    for folder in folders:
        for name in INI_NAMES:
            if (folder / name).exists():
                return folder / name
    return None


def read_ini(path: Path) -> dict[str, str]:
    """`Section.key` -> value, as Boost's `read_ini` reads the file (Boost 1.74,
    `property_tree/ini_parser.hpp`, what XRT 2.26 is built with on Debian 12 and Ubuntu
    22.04) and `config::detail::get_ini_values` flattens it: lines end at `\n` and are
    trimmed of C-locale white space; `;` or `#` starts a comment; a section header ends at
    its first `]` (the rest of the line is ignored); a key is what precedes the first `=`.
    A key before any section stands at the top level, where it gives no `Section.key` but
    takes its name from a section. Raises ValueError for what read_ini refuses (an
    unmatched `[`, a line with no `=` or nothing before it, a section or key twice)."""
    values: dict[str, str] = {}
    top: set[str] = set()                 # the tree's top level: sections and bare keys
    section: str | None = None
    section_keys: set[str] = set()
    for number, raw in enumerate(path.read_text(errors="replace").split("\n"), 1):
        line = raw.strip(_C_SPACE)
        if not line or line[0] in ";#":
            continue
        if line[0] == "[":
            if section is not None and not section_keys:
                top.discard(section)      # an empty section is dropped again
            end = line.find("]")
            if end < 0:
                raise ValueError(f"{path}({number}): unmatched '['")
            section = line[1:end].strip(_C_SPACE)
            if section in top:
                raise ValueError(f"{path}({number}): duplicate section name")
            top.add(section)
            section_keys = set()
            continue
        equals = line.find("=")
        if equals < 0:
            raise ValueError(f"{path}({number}): '=' character not found in line")
        if equals == 0:
            raise ValueError(f"{path}({number}): key expected")
        key = line[:equals].strip(_C_SPACE)
        keys = top if section is None else section_keys
        if key in keys:
            raise ValueError(f"{path}({number}): duplicate key name")
        keys.add(key)
        if section is not None:
            values[f"{section}.{key}"] = line[equals + 1:].strip(_C_SPACE)
    return values


def xrt_config(environ: dict[str, str] | None = None, *, euid: int | None = None,
               exe_dir: Path | None = None, cwd: Path | None = None) -> XrtConfig:
    """XRT's settings for a process with `environ` (default: this one's), as `euid`, from
    an executable in `exe_dir`, in `cwd` (defaults: this process's own)."""
    env = dict(os.environ if environ is None else environ)
    if exe_dir is None:
        try:
            exe_dir = Path(os.readlink("/proc/self/exe")).parent
        except OSError:
            exe_dir = Path(os.path.realpath(sys.executable)).parent
    path = ini_path(env, euid=os.geteuid() if euid is None else euid, exe_dir=exe_dir,
                    cwd=Path.cwd() if cwd is None else cwd)
    if path is None:
        return XrtConfig(env)
    try:
        return XrtConfig(env, path, read_ini(path))
    except (OSError, ValueError) as err:
        return XrtConfig(env, path, {}, str(err))


def capturing() -> bool:
    """Whether XRT would capture in this process (a frame count above 0)."""
    return xrt_config().capturing
