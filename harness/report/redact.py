"""Redaction for reports that leave the machine: stable placeholders for what identifies it.

Replaced everywhere in the report (every string of the data, so the tables
and the embedded YAML alike): the host name, the user name, home folders,
the machine id, serial numbers, MAC addresses and IP addresses (loopback
excepted). The same value always gets the same placeholder, so a reader can
still tell that two paths share a home folder or two lines the same host.

Values come from the report itself (`environment.system`, keys naming a
serial) and from the machine doing the rendering, since a report rendered
where it was written may carry them in free text (argv, messages).
"""

from __future__ import annotations

import getpass
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
HOME = re.compile(r"(?<![\w])/(home|Users)/([^/\s'\"]+)")
ROOT_HOME = re.compile(r"(?<![\w])/root(?=/|\b)")
# Keys whose values are versions: a firmware 1.1.2.65 looks like an IPv4 address.
VERSION_KEY = re.compile(r"version|firmware|fw_|release|kernel|xrt", re.IGNORECASE)
SERIAL_KEY = re.compile(r"serial", re.IGNORECASE)
IDENTITY_KEYS = {"hostname": "hostname", "machine_id": "machine-id", "user": "user"}
KEEP_IPS = {"127.0.0.1", "0.0.0.0", "::1", "::"}
_PLAIN = {int, float, bool, type(None)}
_CONTAINERS = {dict, list}        # values no redaction changes (unless identity)


class Redactor:
    def __init__(self) -> None:
        self.literals: dict[str, str] = {}
        self.counters: dict[str, int] = {}
        self.seen: dict[tuple[str, str], str] = {}
        # A report repeats its strings thousands of times (states, kernels, paths): each
        # is worked out once. Same answer: placeholders are stable once given.
        self._done: dict[tuple[str, bool], str] = {}
        self._versioned: dict[str, bool] = {}
        self._identities: dict[str, bool] = {}

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
        if len(text) >= 3 and text not in ("root", "unknown", "localhost"):
            self.literals[text] = self.placeholder(kind, text)

    def learn(self, data: Any) -> None:
        """Collect identifying values from the report and from this machine."""
        environment = data.get("environment") if isinstance(data, dict) else None
        system = environment.get("system") if isinstance(environment, dict) else None
        system = system if isinstance(system, dict) else {}
        for key, kind in IDENTITY_KEYS.items():
            self.add_literal(kind, system.get(key))
        self._serials(data)
        self.add_literal("hostname", socket.gethostname())
        try:
            self.add_literal("user", getpass.getuser())
        except Exception:
            pass
        try:
            self.add_literal("machine-id", Path("/etc/machine-id").read_text().strip())
        except OSError:
            pass

    def learn_serials(self, data: Any) -> None:
        """Values under keys naming a serial, anywhere in `data`."""
        self._serials(data)

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

    def text(self, value: str, key: str = "") -> str:
        versioned = self._versioned.get(key)
        if versioned is None:
            versioned = self._versioned[key] = bool(VERSION_KEY.search(key))
        done = self._done.get((value, versioned))
        if done is None:
            done = self._done[(value, versioned)] = self._text(value, versioned)
        return done

    def _text(self, value: str, versioned: bool) -> str:
        for literal in sorted(self.literals, key=len, reverse=True):
            if literal in value:
                # Whole words only: a host "halo" must not eat "Strix Halo"'s neighbours.
                pattern = rf"(?<![\w-]){re.escape(literal)}(?![\w-])"
                value = re.sub(pattern, self.literals[literal], value)
        value = HOME.sub(lambda m: f"/{m.group(1)}/{self._home(m.group(2))}", value)
        value = ROOT_HOME.sub("~", value)
        value = MAC.sub(lambda m: self.placeholder("mac", m.group(0).lower()), value)
        value = IPV6.sub(lambda m: m.group(0) if m.group(0) in KEEP_IPS
                         else self.placeholder("ip", m.group(0).lower()), value)
        if not versioned:
            value = IPV4.sub(lambda m: self._ipv4(m, value), value)
        return value

    def _ipv4(self, match: re.Match, whole: str) -> str:
        address = match.group(0)
        before = whole[max(0, match.start() - 24):match.start()]
        if address in KEEP_IPS or address.startswith("127.") or VERSION_KEY.search(before):
            return address              # loopback, or a version number ("firmware 1.1.2.65")
        return self.placeholder("ip", address)

    def _home(self, name: str) -> str:
        if name.startswith("<") and name.endswith(">"):
            return name                  # already a placeholder
        return self.placeholder("user", name)

    def _identity(self, key: str) -> bool:
        """Whether a value under `key` *is* an identity (replaced whole)."""
        known = self._identities.get(key)
        if known is None:
            known = self._identities[key] = key in IDENTITY_KEYS or \
                bool(SERIAL_KEY.search(key))
        return known

    def data(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self.data(v, k if isinstance(k, str) else key) for k, v in value.items()}
        if isinstance(value, list):
            if self._identity(key):
                return [self.data(v, key) for v in value]
            # the bulk of a report: lists of numbers (chains, indices), kept as they are
            return [v if v.__class__ in _PLAIN else self.data(v, key) for v in value]
        if isinstance(value, (str, int)) and not isinstance(value, bool) and \
                self._identity(key):
            # A field that *is* an identity is replaced whole, however short its value.
            kind = IDENTITY_KEYS.get(key, "serial")
            return self.literals.get(str(value)) or self.placeholder(kind, str(value))
        if isinstance(value, str):
            return self.text(value, key)
        return value


def redact(data: Any) -> Any:
    """A redacted copy of a report's data."""
    redactor = Redactor()
    redactor.learn(data)
    return redactor.data(data)
