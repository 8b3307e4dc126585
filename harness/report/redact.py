"""Redaction for reports that leave the machine: stable placeholders for what identifies it.

Replaced everywhere in the report (every string of the data, so the tables and the
embedded YAML alike): the host name and its domain, the user name (also where it is part
of a longer name, `zelda9-jupyter`), home folders wherever they are mounted (`/home/u`,
`/var/home/u`, `/nfs/home/u`, `/Users/u`) and the name in them wherever else it appears,
the machine id, serial numbers (under keys naming a serial, and in free text such as
`Serial Number: ...`), disk UUIDs (`root=UUID=...`, `by-uuid/...`), MAC addresses, IP
addresses (loopback excepted; a dotted quad right after "firmware" or "version" is a
version), and credentials in URLs (`http://user:secret@host`, `?token=...`). The same
value always gets the same placeholder, so a reader can still tell that two paths share
a home folder or two lines the same host.

Values come from the report itself (`environment.system`, keys naming a serial, home
folders and serial numbers in its text) and from the machine doing the rendering (host
name, user, `SUDO_USER` under sudo, machine id), since a report rendered where it was
written may carry them in free text (argv, messages). What is learned is learned before
anything is written: `Digest` learns from every trial in its pass (`learn_raw`).

A report of any size is redacted in flat memory and about the time it takes to read:
a string (or a journal line, `untouched`) that nothing here could change is passed by
with one scan, and the strings worked out are remembered only up to a bound.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import socket
from pathlib import Path
from typing import Any

MAC = re.compile(r"\b(?:[0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}\b")
IPV4 = re.compile(r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}"
                  r"(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\w.])")
IPV6 = re.compile(r"(?<![\w:])(?:(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}|"
                  r"(?:[0-9A-Fa-f]{1,4}:){1,7}:(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4})*)?|"
                  r"::(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4})*))(?![\w:])")
# a home folder wherever it is mounted: /home/u, /var/home/u (Fedora Atomic), /nfs/home/u
HOME = re.compile(r"/(home|Users)/([^/\s'\"<>:;,`|)\]}]+)")
# a user name as a home folder's last part can be: what `learn_text` takes for one
USER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{2,31}\Z")
# a home folder that starts a path (not one inside a URL, "example.com/home/docs"): only
# these teach a user name to redact everywhere else
PATH_HOME = re.compile(r"(?:^|(?<=[\s'\"=:,;(\[{<>]))(?:/[\w.+-]+)*?/(?:home|Users)/"
                       r"([^/\s'\"<>:;,`|)\]}]+)")
ROOT_HOME = re.compile(r"(?<![\w])/root(?=/|\b)")
URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s@'\"<>]+)@")
SECRET_PARAM = re.compile(r"(?i)([?&;](?:access_token|token|api[_-]?key|key|password|passwd|"
                          r"pwd|secret|auth|sig|signature)=)([^&\s#'\"<>]+)")
AUTHORIZATION = re.compile(r"(?i)\b((?:authorization:\s*)?(?:bearer|basic)\s+)"
                           r"([A-Za-z0-9._~+/=-]{8,})")
SERIAL_TEXT = re.compile(r"(?i)\b(serial(?:[ _-]?(?:number|num|no\.?))?|s/n)"
                         r"(\s*[\"']?\s*[:=#]\s*[\"']?\s*|(?<=number)\s+|(?<=no)\s+)"
                         r"((?=[\w.:-]*\d)[A-Za-z0-9][\w.:-]*[A-Za-z0-9])")
DISK_UUID = re.compile(r"(?i)(\b(?:part)?uuid=|by-(?:part)?uuid/|\bluks-|rd\.luks\.uuid=)"
                       r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|"
                       r"[0-9a-f]{4}-[0-9a-f]{4}\b|[0-9a-f]{16}\b)")
# A dotted quad right after one of these words is a version ("firmware 1.1.2.65").
VERSION_BEFORE = re.compile(r"(?i)(?<![a-z])(?:version|firmware|fw|ver|release|v)"
                            r"[\s:=_\"'-]{0,3}\Z")
VERSION_VALUE = re.compile(r"\s*v?\d+(?:\.\d+)+(?:[-+~ ].*)?\Z", re.DOTALL)
# Keys whose values are versions: a firmware 1.1.2.65 under one looks like an IPv4 address.
VERSION_KEY = re.compile(r"version|firmware|fw_|release|kernel|xrt", re.IGNORECASE)
SERIAL_KEY = re.compile(r"serial", re.IGNORECASE)
IDENTITY_KEYS = {"hostname": "hostname", "machine_id": "machine-id", "user": "user"}
KEEP_IPS = {"127.0.0.1", "0.0.0.0", "::1", "::"}
NOT_NAMES = {"root", "unknown", "localhost", "nobody", "user", "users", "home"}
_PLAIN = {int, float, bool, type(None)}
_SCALARS = _PLAIN | {str}
_CONTAINERS = {dict, list}        # values no redaction changes (unless identity)
MAX_REMEMBERED = 1 << 16          # strings worked out and kept (the rest worked out again)

# What any rule below could act on, each found by a scan that starts at a fixed character
# (the fast kind): a string with none of them is left as it is, with no rule run on it.
_FIXED = ("/home/", "/Users/", "/root", "://", "::")
_WORDS = ("serial", "s/n", "uuid", "luks-", "bearer", "basic", "token=", "key=",
          "password=", "passwd=", "pwd=", "secret=", "auth=", "sig=", "signature=")
_SHAPES = (r"\.\d{1,3}\.\d{1,3}\.",                                    # IPv4
           r":[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:",      # MAC, IPv6
           r"-[0-9A-Fa-f]{2}-[0-9A-Fa-f]{2}-[0-9A-Fa-f]{2}-")             # MAC with dashes
_WORDS_FOUND = re.compile("|".join(map(re.escape, _WORDS)))
_LINE_SHAPES = tuple(re.compile(shape.encode()) for shape in _SHAPES)
# and in a journal line as written: identity keys, and escapes a literal could hide behind
_LINE_FIXED = tuple(n.encode() for n in _FIXED) + (b'"hostname": ', b'"machine_id": ',
                                                   b'"user": ', b"\\u", b"\\/")
_LINE_WORDS = tuple(w.encode() for w in _WORDS)


class Redactor:
    def __init__(self) -> None:
        self.literals: dict[str, str] = {}
        self.hosts: set[str] = set()
        self.counters: dict[str, int] = {}
        self.seen: dict[tuple[str, str], str] = {}
        # A report repeats its strings thousands of times (states, kernels, paths): each
        # is worked out once while few; placeholders are stable once given either way.
        self._done: dict[tuple[str, bool], str] = {}
        self._versioned: dict[str, bool] = {}
        self._identities: dict[str, bool] = {}
        self._patterns: tuple[re.Pattern[str], re.Pattern[str], tuple[bytes, ...]] | None \
            = None

    # -- what is learned -----------------------------------------------------------------

    def placeholder(self, kind: str, value: str) -> str:
        key = (kind, value)
        if key not in self.seen:
            self.counters[kind] = self.counters.get(kind, 0) + 1
            number = self.counters[kind]
            self.seen[key] = f"<{kind}>" if kind in ("hostname", "machine-id") and number == 1 \
                else f"<{kind}-{number}>"
        return self.seen[key]

    def add_literal(self, kind: str, value: Any) -> None:
        text = str(value).strip() if value is not None else ""
        # Very short values (a user "a", uid "0") would shred unrelated text.
        if len(text) < 3 or text.lower() in NOT_NAMES or text in self.literals or \
                text.startswith("<") or any(c.isspace() for c in text):
            return
        shown = text
        if kind == "hostname":
            # a host is one name however it is written: "box" and "box.lab.example.com"
            host, _, domain = text.partition(".")
            if "." in domain:               # a registered domain ("lab.example.com")
                self.add_literal("domain", domain)
            if len(host) >= 3 and host.lower() not in NOT_NAMES:
                shown = host
                self.literals.setdefault(host, self.placeholder(kind, host))
                self.hosts.add(host)
            self.hosts.add(text)
        self.literals[text] = self.placeholder(kind, shown)
        self._patterns = None
        self._done.clear()

    def learn(self, data: Any) -> None:
        """Collect identifying values from the report (or a fingerprint's `system`) and
        from this machine."""
        environment = data.get("environment") if isinstance(data, dict) else None
        system = environment.get("system") if isinstance(environment, dict) else None
        if system is None and isinstance(data, dict) and isinstance(data.get("system"), dict):
            system = data["system"]           # a probe's fingerprint, not a report
        system = system if isinstance(system, dict) else {}
        for key, kind in IDENTITY_KEYS.items():
            self.add_literal(kind, system.get(key))
        self.learn_machine()
        self._serials(data)
        self.learn_strings(data)

    def learn_machine(self) -> None:
        """This machine's names: its host name, the user (and, under sudo, the user who
        ran sudo), the home folder's name, the machine id."""
        self.add_literal("hostname", socket.gethostname())
        try:
            self.add_literal("user", getpass.getuser())
        except Exception:
            pass
        for name in ("SUDO_USER", "USER", "LOGNAME"):
            self.add_literal("user", os.environ.get(name))
        home = os.environ.get("HOME") or ""
        if HOME.search(home):
            self.learn_text(home)
        try:
            self.add_literal("machine-id", Path("/etc/machine-id").read_text().strip())
        except OSError:
            pass

    def learn_text(self, text: str) -> None:
        """Names free text gives away: the user of a home folder, a serial number."""
        for match in PATH_HOME.finditer(text):
            name = match.group(1)
            if USER_NAME.match(name):
                self.add_literal("user", name)
        for match in SERIAL_TEXT.finditer(text):
            self.add_literal("serial", match.group(3))

    def learn_raw(self, raw: bytes) -> None:
        """`learn_text` on a journal line, when it could hold anything to learn."""
        if b"/home/" in raw or b"/Users/" in raw or b"erial" in raw or b"ERIAL" in raw \
                or b"/n" in raw:
            self.learn_text(raw.decode("utf-8", "replace"))

    def learn_serials(self, data: Any) -> None:
        """Values under keys naming a serial, anywhere in `data`."""
        self._serials(data)

    def learn_strings(self, data: Any) -> None:
        """`learn_text` on every string of `data`."""
        stack = [data]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                self.learn_text(item)
            elif isinstance(item, dict):
                stack += item.values()
            elif isinstance(item, list):
                stack += [v for v in item if v.__class__ not in _PLAIN]

    def _serials(self, data: Any) -> None:
        # past plain numbers at once: a sweep's report holds millions of them
        if data.__class__ is dict:
            for key, value in data.items():
                if isinstance(key, str) and SERIAL_KEY.search(key) and \
                        isinstance(value, (str, int)):
                    self.add_literal("serial", value)
                elif value.__class__ in _CONTAINERS:
                    self._serials(value)
        elif data.__class__ is list:
            for item in data:
                if item.__class__ in _CONTAINERS:
                    self._serials(item)

    # -- what is replaced ----------------------------------------------------------------

    def _compiled(self) -> tuple[re.Pattern[str], re.Pattern[str], tuple[bytes, ...]]:
        if self._patterns is None:
            names = sorted(self.literals, key=len, reverse=True)
            alternation = "|".join(map(re.escape, names)) or r"(?!)"
            # whole names only ("halo" must not eat "Strix Halo"'s neighbours), but a hyphen
            # or a dot ends a name: "zelda9-jupyter" holds the user "zelda9"
            literal = re.compile(rf"(?<![A-Za-z0-9_])({alternation})"
                                 r"((?:\.[A-Za-z0-9-]+)*)(?![A-Za-z0-9_])")
            # one search per string (most are short: a state, a kernel's name)
            trigger = re.compile("|".join([*map(re.escape, [*names, *_FIXED]), *_SHAPES]))
            escaped = tuple(json.dumps(n)[1:-1].encode() for n in names)
            self._patterns = (literal, trigger, escaped + _LINE_FIXED)
        return self._patterns

    def _may_change(self, value: str) -> bool:
        return self._compiled()[1].search(value) is not None or \
            _WORDS_FOUND.search(value.lower()) is not None

    def untouched(self, raw: bytes) -> bool:
        """Whether a journal line as written (one JSON object) holds nothing this redactor
        would change, so it may be copied as it is."""
        needles = self._compiled()[2]
        if any(needle in raw for needle in needles):
            return False
        low = raw.lower()
        return not (any(word in low for word in _LINE_WORDS)
                    or any(shape.search(raw) for shape in _LINE_SHAPES))

    def text(self, value: str, key: str = "") -> str:
        versioned = self._versioned.get(key)
        if versioned is None:
            versioned = self._versioned[key] = bool(VERSION_KEY.search(key))
        done = self._done.get((value, versioned))
        if done is None:
            done = self._text(value, versioned) if self._may_change(value) else value
            if len(self._done) >= MAX_REMEMBERED:
                self._done.clear()
            self._done[(value, versioned)] = done
        return done

    def _text(self, value: str, versioned: bool) -> str:
        literal = self._compiled()[0]
        value = URL_USERINFO.sub(lambda m: m.group(1) + "<credentials>@", value)
        value = SECRET_PARAM.sub(lambda m: m.group(1) + "<secret>", value)
        value = AUTHORIZATION.sub(lambda m: m.group(1) + "<secret>", value)
        if self.literals:
            value = literal.sub(self._literal, value)
        value = HOME.sub(lambda m: f"/{m.group(1)}/{self._home(m.group(2))}", value)
        value = ROOT_HOME.sub("~", value)
        value = DISK_UUID.sub(lambda m: m.group(1) + self.placeholder("uuid", m.group(2).lower()),
                              value)
        value = SERIAL_TEXT.sub(lambda m: m.group(1) + m.group(2)
                                + self.placeholder("serial", m.group(3)), value)
        value = MAC.sub(lambda m: self.placeholder("mac", m.group(0).lower()), value)
        value = IPV6.sub(lambda m: m.group(0) if m.group(0) in KEEP_IPS
                         else self.placeholder("ip", m.group(0).lower()), value)
        if not (versioned and VERSION_VALUE.match(value)):
            value = IPV4.sub(lambda m: self._ipv4(m, value), value)
        return value

    def _literal(self, match: re.Match[str]) -> str:
        name, domain = match.group(1), match.group(2)
        # a host name takes its domain with it ("box.lab.example.com" is one name)
        return self.literals[name] + ("" if name in self.hosts else domain)

    def _ipv4(self, match: re.Match[str], whole: str) -> str:
        address = match.group(0)
        before = whole[max(0, match.start() - 16):match.start()]
        if address in KEEP_IPS or address.startswith("127.") or VERSION_BEFORE.search(before):
            return address              # loopback, or a version number ("firmware 1.1.2.65")
        return self.placeholder("ip", address)

    def _home(self, name: str) -> str:
        if name.startswith("<") and name.endswith(">"):
            return name                  # already a placeholder
        return self.literals.get(name) or self.placeholder("user", name)

    def _identity(self, key: str) -> bool:
        """Whether a value under `key` *is* an identity (replaced whole)."""
        known = self._identities.get(key)
        if known is None:
            known = self._identities[key] = key in IDENTITY_KEYS or \
                bool(SERIAL_KEY.search(key))
        return known

    def data(self, value: Any, key: str = "") -> Any:
        kind = value.__class__
        if kind is dict:
            # the bulk of a report: mappings of numbers and short strings, walked inline
            identities, text, out = self._identities, self.text, {}
            for k, v in value.items():
                inner = v.__class__
                identity = identities.get(k) if k.__class__ is str else False
                if identity is None:
                    identity = self._identity(k)
                if identity or inner not in _SCALARS:
                    out[k] = self.data(v, k if k.__class__ is str else key)
                elif inner is str:
                    out[k] = text(v, k if k.__class__ is str else key)
                else:
                    out[k] = v
            return out
        if kind is list:
            if self._identity(key):
                return [self.data(v, key) for v in value]
            # lists of numbers (chains, indices) are kept as they are
            return [v if v.__class__ in _PLAIN else self.data(v, key) for v in value]
        if isinstance(value, (dict, list)):        # a subclass: as its plain kind
            return self.data(dict(value) if isinstance(value, dict) else list(value), key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and \
                self._identity(key):
            # A field that *is* an identity is replaced whole, however short its value.
            kind_name = IDENTITY_KEYS.get(key, "serial")
            return self.literals.get(str(value)) or self.placeholder(kind_name, str(value))
        if isinstance(value, str):
            return self.text(value, key)
        return value


def redact(data: Any) -> Any:
    """A redacted copy of a report's data."""
    redactor = Redactor()
    redactor.learn(data)
    return redactor.data(data)
