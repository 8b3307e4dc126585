"""Redaction for reports that leave the machine: stable placeholders for what identifies it.

Replaced everywhere in the report (every string of the data, so the tables and the
embedded YAML alike), by the rules of `harness.report.redact_rules`: credentials in URLs
(a password holding @ included, with or without a scheme), every URL query value but a few
harmless names and parameters named like a secret, Authorization headers, access tokens
(hf_, ghp_, github_pat_, AWS key ids, JWTs, ...), e-mail addresses, disk WWNs, Wi-Fi SSIDs,
each of these percent-encoded too, the host name and
its domain, the user name, home folders wherever they are mounted (`/home/u`,
`/var/home/u`, `/Users/u`), the machine id, serial numbers (under keys naming a serial,
whatever their value: a number, several words, a list; and in text labelled `Serial
Number`, `S/N`, `SN:`, `Service Tag`), disk UUIDs (`root=UUID=`, `by-uuid/`,
`cryptdevice=luks-`) and every other UUID but the artefacts' identities (xclbin and ELF
UUIDs) a maintainer needs, MAC addresses in every notation, IPv4 and IPv6 addresses
(loopback excepted; a dotted quad right after "firmware" or "version" is a version).
The `serve-probe` prompt and a server's own error text are withheld whole. The same value
always gets the same placeholder, so a reader can still tell that two paths share a home
folder or two lines the same host.

Names are matched in any letter case, with Unicode case folding (`Jörg`, `JÖRG`; `ß` and
`ss`), wherever they stand joined to other text (`quill5_jupyter`, `r_quill5.yaml`: the
rule is `harness.report.redact_names`'s). A user or host whose name is a word the report
itself uses (`staging`, `xrt`, `test`: `VOCABULARY`) is replaced only where it stands as a
name (a home folder, `~name`, `name@host`, `@host`, `user=name`, `host: name`), never as
that word elsewhere, and no
name is replaced inside the harness's own fields (a profile, a flavour, a state:
`STRUCTURED_KEYS`), which `report check` and the bundle hold free of placeholders.

Values come from the report itself (`environment.system`, keys naming a serial, home
folders and serial numbers in its text) and from the machine doing the rendering (host
name, user, `SUDO_USER` under sudo, machine id), since a report rendered where it was
written may carry them in free text (argv, messages). What is learned is learned before
anything is written: `Digest` learns from every trial in its pass (`learn_raw`).

A report of any size is redacted in flat memory and about the time it takes to read:
a string (or a journal line, `untouched`) in which no rule's trigger is found is passed
by with one scan, and the strings worked out are remembered only up to a bound.
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import json
import os
import re
from pathlib import Path
from typing import Any

from harness.report.model import mapping
from harness.report.redact_names import NameMatcher, fold
from harness.report.redact_rules import (
    HOME,
    NAMES,
    PERCENT,
    PLACEHOLDER,
    RULES,
    SERIAL_TEXT,
    VERSION_VALUE,
    RedactionRule,
)

__all__ = ["HOME", "VERSION_VALUE", "Redactor", "redact"]

# a user name as a home folder's last part can be: what `learn_text` takes for one
USER_NAME = re.compile(r"[^\W\d][\w.-]{2,31}\Z")
# a home folder that starts a path (not one inside a URL, "example.com/home/docs"): only
# these teach a user name to redact everywhere else
PATH_HOME = re.compile(r"(?:^|(?<=[\s'\"=:,;(\[{<>]))(?:/[\w.+-]+)*?/(?:home|Users)/"
                       r"([^/\s'\"<>:;,`|)\]}]+)")
# Keys whose values are versions: a firmware 1.1.2.65 under one looks like an IPv4 address.
VERSION_KEY = re.compile(r"version|firmware|fw_|release|kernel|xrt", re.IGNORECASE)
SERIAL_KEY = re.compile(r"serial|service_tag|asset_tag", re.IGNORECASE)
IDENTITY_KEYS = {"hostname": "hostname", "machine_id": "machine-id", "user": "user"}
# the harness's own fields: its words, never a name to replace (a profile `staging,...`)
# (`command` is not one: a process's name under `device_users` is another program's, and
# the report's own command is a word of VOCABULARY)
STRUCTURED_KEYS = frozenset({"profile", "flavour", "kind", "status", "state",
                             "schema", "deviations", "flow", "message_form", "role", "opcode",
                             "outcome", "name"})
# what is withheld whole: a prompt the user typed (`serve-probe --prompt`)
WITHHELD_KEYS = {"prompt": "prompt"}
# a serve-probe request's error is the server's own text when its outcome says so
SERVER_OUTCOMES = frozenset({"error-body", "http-error", "bad-json", "unexpected", "redirect"})
NOT_NAMES = {"root", "unknown", "localhost", "nobody", "user", "users", "home"}
# Words the report itself uses (its profiles, XRT's and the driver's names, the words of
# its verdicts and tables): a user or host of that name is replaced only where it stands
# as a name. Profile words are held here by tests/test_redaction_rules.py.
_VOCABULARY_WORDS = """
    amd amdxdna accel aie aie2 aie2p admin arch at bin bisect boot build bundle cap capture
    case cases chain chains check checks ci client command commands config context core cpu
    cuda debian default dev diagnose emulate export investigate probe reproduce render
    serve-probe sweep
    device devices docker driver drivers elf emulated emulator ert error event events
    fastflowlm fedora firmware flaky flm flow guest hang hardware harness host inflight
    jenkins job jobs kernel kernels layer layers legacy lib linux local mainline main master
    model models npu npu1 npu4 npu5 npu6 oot opt plan plans profile protocol pyxrt
    realtime release report reports rocm run runlist runlists runner runs seed server share
    simulated slow smi staging stable state status sudo system test tests testing timeout
    trace trial trials ubuntu us usr vagrant validate version worker xclbin xclbins xdna
    xilinx xrt
"""
VOCABULARY = frozenset(_VOCABULARY_WORDS.split())
# where a valid trial may hold keys of its own choosing (everything else is fixed by the
# schema): the only places a serial number's key can be
TRIAL_FREE_FORM = ("worker", "device_users", "recovery", "kernel_log")
MAX_REMEMBERED = 1 << 16          # strings worked out and kept (the rest worked out again)
_PLAIN = {int, float, bool, type(None)}
_SCALARS = _PLAIN | {str}
_CONTAINERS = {dict, list}        # values no redaction changes (unless identity)
# in a journal line as written (lowercased): identity and withheld keys, and escapes a
# trigger could hide behind
_LINE_EXTRA = ('"hostname": ', '"machine_id": ', '"user": ', '"prompt": ', "\\u", "\\/")
# what a journal line (lowercased) must hold for `learn_text` to learn anything from it:
# what PATH_HOME and SERIAL_TEXT start with
_TEACHES = ("/home/", "/users/", "serial", "s/n", "sn:", "sn=", "sn#", "service", "asset")


_META = frozenset("\\.^$*+?{}[]|()")
# Stems of plain triggers, looked for in their place by the fast paths: fewer strings to
# look for (each look is a pass over the text) where the harness's own text holds none of
# them. A stem is used only for the triggers that contain it, so the fast path stays a
# necessary condition of every rule.
STEMS = ("mac", "gh", "service", "asset", "sn", "uuid")


def literal(trigger: str) -> bool:
    """A trigger that is a plain string, not a pattern."""
    return not any(c in _META for c in trigger)


def fast_strings(rules: tuple[RedactionRule, ...]) -> list[str]:
    """The plain strings the fast paths look for: each plain trigger, or a stem it holds,
    and none that holds another (which it would find first)."""
    found: list[str] = []
    for trigger in (t for rule in rules for t in rule.triggers if literal(t)):
        stem = next((s for s in STEMS if s in trigger), trigger)
        if stem not in found:
            found.append(stem)
    return [s for s in found if not any(o != s and o in s for o in found)]


def fast_shapes(rules: tuple[RedactionRule, ...]) -> list[str]:
    return [t for rule in rules for t in rule.triggers if not literal(t)]


LONG = 256          # characters past which a text is searched a part at a time


class Finder:
    """Whether a text holds any of some plain strings and patterns, in one search for a
    short text, and for a long one in one search per first character: a pattern whose
    every branch starts with one fixed character is found by scanning for that character,
    many times faster than trying a pattern of many branches at every position. Searches
    bytes (a journal line as written) when `as_bytes`."""

    def __init__(self, strings: list[str], patterns: list[str], as_bytes: bool = False) -> None:
        groups: dict[str, list[str]] = {}
        for text in strings:
            groups.setdefault(text[:1], []).append(re.escape(text[1:]))
        sources = [re.escape(first) + "(?:" + "|".join(rests) + ")"
                   for first, rests in groups.items()] + patterns

        def compiled(source: str) -> re.Pattern[Any]:
            return re.compile(source.encode("utf-8") if as_bytes else source)
        self.whole = compiled("|".join(sources) or "(?!)")
        self.parts = [compiled(source) for source in sources]

    def search(self, text: Any) -> bool:
        if len(text) < LONG:
            return self.whole.search(text) is not None
        return any(part.search(text) for part in self.parts)


def this_host() -> str:
    """This machine's host name, as gethostname(2) gives it (socket would bring selectors
    into every run, which writes its report redacted)."""
    return os.uname().nodename


class Redactor:
    def __init__(self, rules: tuple[RedactionRule, ...] = RULES) -> None:
        self.rules = rules
        self.literals: dict[str, str] = {}       # folded name -> placeholder
        self.hosts: set[str] = set()             # folded: a host takes its domain with it
        self.positional: set[str] = set()        # folded names that are VOCABULARY words
        self.kept_uuids: set[str] = set()        # the artefacts' identities
        self.counters: dict[str, int] = {}
        self.seen: dict[tuple[str, str], str] = {}
        # A report repeats its strings thousands of times (states, kernels, paths): each
        # is worked out once while few; placeholders are stable once given either way.
        self._done: dict[tuple[str, int], str] = {}
        self._flags: dict[str, int] = {}
        self._identities: dict[str, bool] = {}
        self._names: NameMatcher | None = None
        self._line: Finder | None = None
        self._teaches: Finder | None = None
        self._fast: Finder

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
        folded = fold(text)
        # Very short values (a user "a", uid "0") would shred unrelated text; a serial may
        # be several words, a name is one
        if len(text) < 3 or folded in NOT_NAMES or folded in self.literals or \
                text.startswith("<") or (kind != "serial" and any(c.isspace() for c in text)):
            return
        shown = folded
        if kind == "hostname":
            # a host is one name however it is written: "box" and "box.lab.example.com"
            host, _, domain = folded.partition(".")
            if "." in domain:               # a registered domain ("lab.example.com")
                self.add_literal("domain", domain)
            if len(host) >= 3 and host not in NOT_NAMES:
                shown = host
                self.literals.setdefault(host, self.placeholder(kind, host))
                self.hosts.add(host)
                if host in VOCABULARY:
                    self.positional.add(host)
            self.hosts.add(folded)
        if kind in ("user", "hostname") and folded in VOCABULARY:
            self.positional.add(folded)
        self.literals[folded] = self.placeholder(kind, shown)
        self._names = None
        self._line = None
        self._done.clear()

    @classmethod
    def of_this_machine(cls) -> Redactor:
        """A redactor that has learned this machine's names first, so they take the same
        placeholders whenever it is made here (a continued report's stay its own)."""
        redactor = cls()
        redactor.learn_machine()
        return redactor

    def continue_numbering(self, numbers: dict[str, int]) -> None:
        """Number new placeholders after those a text already holds (`numbers`: the
        highest of each kind), so a name learned now never takes one given before."""
        for kind, number in numbers.items():
            self.counters[kind] = max(self.counters.get(kind, 0), number)

    def learn(self, data: Any) -> None:
        """Collect identifying values from the report (or a fingerprint's `system`) and
        from this machine, and the artefacts' UUIDs that stay."""
        environment = data.get("environment") if isinstance(data, dict) else None
        system = environment.get("system") if isinstance(environment, dict) else None
        if system is None and isinstance(data, dict) and isinstance(data.get("system"), dict):
            system = data["system"]           # a probe's fingerprint, not a report
        system = system if isinstance(system, dict) else {}
        # a report redacted already keeps its placeholders: on the machine that wrote it its
        # names are learned first, so they take the placeholders they took then; every other
        # name is numbered after the report's own, so two names never share one
        numbers = placeholder_numbers_in(data)
        if numbers and written_here(data):
            self.learn_machine()
        self.continue_numbering(numbers)
        for key, kind in IDENTITY_KEYS.items():
            self.add_literal(kind, system.get(key))
        self.learn_machine()
        self._serials(data)
        if isinstance(data, dict):
            self._identities_kept({k: v for k, v in data.items() if k != "environment"})
        self.learn_strings(data)

    def _identities_kept(self, data: Any) -> None:
        """UUIDs under keys naming one, outside the machine's facts: an xclbin's or ELF's
        identity, which XRT's own messages quote."""
        stack = [data]
        while stack:
            item = stack.pop()
            if item.__class__ is dict:
                for key, value in item.items():
                    if isinstance(key, str) and "uuid" in key.lower() and \
                            isinstance(value, str):
                        self.kept_uuids.add(value.lower())
                    elif value.__class__ in _CONTAINERS:
                        stack.append(value)
            elif item.__class__ is list:
                stack += [v for v in item if v.__class__ in _CONTAINERS]

    def learn_machine(self) -> None:
        """This machine's names: its host name, the user (and, under sudo, the user who
        ran sudo), the home folder's name, the machine id."""
        self.add_literal("hostname", this_host())
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

    def learn_raw(self, raw: bytes, low: bytes | None = None) -> None:
        """`learn_text` on a journal line, when it could hold anything to learn."""
        if self._teaches is None:
            self._teaches = Finder(list(_TEACHES), [], as_bytes=True)
        if self._teaches.search(raw.lower() if low is None else low):
            self.learn_text(raw.decode("utf-8", "replace"))

    def learn_trial(self, trial: dict[str, Any], raw: bytes = b"", *,
                    everywhere: bool = False) -> None:
        """What a trial gives away (`raw`: its journal line as written, where there is one):
        names in its free text, and serials under keys naming one where a valid trial may
        hold keys of its own choosing (anywhere, for a trial no check has read)."""
        if raw:
            self.learn_raw(raw)
        else:
            self.learn_strings(trial)
        if everywhere:
            self.learn_serials(trial)
            return
        for key in TRIAL_FREE_FORM:
            if key in trial:
                self.learn_serials(trial[key])
        if b'"health": {' in raw or not raw:
            for outcome in trial.get("runlists") or []:
                if isinstance(outcome, dict) and "health" in outcome:
                    self.learn_serials(outcome["health"])

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

    def _serials(self, data: Any, keyed: bool = False) -> None:
        # past plain numbers at once: a sweep's report holds millions of them
        if data.__class__ is dict:
            for key, value in data.items():
                serial = isinstance(key, str) and bool(SERIAL_KEY.search(key))
                if serial and isinstance(value, (str, int)) and not isinstance(value, bool):
                    self.add_literal("serial", value)
                elif value.__class__ in _CONTAINERS:
                    self._serials(value, serial)
        elif data.__class__ is list:
            for item in data:
                if keyed and isinstance(item, (str, int)) and not isinstance(item, bool):
                    self.add_literal("serial", item)        # a list of serials
                elif item.__class__ in _CONTAINERS:
                    self._serials(item)

    # -- what is replaced ----------------------------------------------------------------

    def _compiled(self) -> NameMatcher:
        """The names as patterns (`harness.report.redact_names`), and the fast path's one
        scan: every rule's trigger and every name."""
        if self._names is None:
            self._names = NameMatcher(self.literals, self.positional, self.hosts)
            self._fast = Finder(fast_strings(self.rules),
                                [*fast_shapes(self.rules), *self._names.every])
        return self._names

    def _may_change(self, value: str) -> bool:
        if self._names is None:
            self._compiled()
        return self._fast.search(value.lower())

    def untouched(self, raw: bytes, low: bytes | None = None) -> bool:
        """Whether a journal line as written (one JSON object) holds nothing this redactor
        would change, so it may be copied as it is (`low`: the line lowercased, where the
        caller has it)."""
        if self._line is None:
            # plain strings are looked for with `in` (far faster than a pattern of many
            # branches), the shapes with one pattern
            plain = fast_strings(self.rules) + [json.dumps(n)[1:-1] for n in self.literals]
            self._line = Finder([*plain, *_LINE_EXTRA], fast_shapes(self.rules),
                                as_bytes=True)
        return not self._line.search(raw.lower() if low is None else low)

    def text(self, value: str, key: str = "") -> str:
        flags = self._flags.get(key)
        if flags is None:
            flags = self._flags[key] = (1 if VERSION_KEY.search(key) else 0) | \
                (2 if key in STRUCTURED_KEYS else 0)
        done = self._done.get((value, flags))
        if done is None:
            done = self._text(value, flags) if self._may_change(value) else value
            if len(self._done) >= MAX_REMEMBERED:
                self._done.clear()
            self._done[(value, flags)] = done
        return done

    def _text(self, value: str, flags: int) -> str:
        versioned, structured = bool(flags & 1), bool(flags & 2)
        names_seen = self._compiled().seen
        low = value.lower()
        for rule in self.rules:
            if rule.name == PERCENT and flags & 4:
                continue
            if rule.name == NAMES:
                fired = bool(self.literals) and names_seen.search(low) is not None
            else:
                fired = rule.trigger().search(low) is not None
            if fired:
                changed = rule.apply(self, value, structured if rule.name == NAMES
                                     else versioned)
                if changed != value:
                    value, low = changed, changed.lower()
        return value

    def replace_names(self, value: str, structured: bool) -> str:
        """The learned names wherever they stand joined to other text (but in the harness's
        own fields), and those that are words of the report's where they stand as names."""
        return self._compiled().replace(value, structured)

    def redacted(self, value: str, versioned: bool, decoding: bool) -> str:
        """`value` through every rule (a rule's reading of a text, redacted again), or
        every rule but the decoding of percent-encoding."""
        return self._text(value, (1 if versioned else 0) | (0 if decoding else 4))

    def home(self, name: str) -> str:
        """The placeholder of the user whose home folder is `name`."""
        if name.startswith("<") and name.endswith(">"):
            return name                  # already a placeholder
        return self.literals.get(fold(name)) or self.placeholder("user", fold(name))

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
            server = value.get("outcome") in SERVER_OUTCOMES and "wall_ms" in value
            for k, v in value.items():
                inner = v.__class__
                if inner is str and (k in WITHHELD_KEYS or (server and k == "error")):
                    out[k] = withheld(WITHHELD_KEYS.get(k, "server text"), v)
                    continue
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
            if key == "argv":
                value = _argv_withheld(value)
            # lists of numbers (chains, indices) are kept as they are
            return [v if v.__class__ in _PLAIN else self.data(v, key) for v in value]
        if isinstance(value, (dict, list)):        # a subclass: as its plain kind
            return self.data(dict(value) if isinstance(value, dict) else list(value), key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and \
                self._identity(key):
            if isinstance(value, str) and PLACEHOLDER.fullmatch(value):
                return value       # redacted already (a redacted report read again): kept
            # A field that *is* an identity is replaced whole, however short its value.
            kind_name = IDENTITY_KEYS.get(key, "serial")
            return self.literals.get(fold(str(value))) or \
                self.placeholder(kind_name, fold(str(value)))
        if isinstance(value, str):
            return self.text(value, key)
        return value


# the options whose value is withheld from a command line, as the field it fills is
WITHHELD_OPTIONS = {"--prompt": "prompt"}


def _argv_withheld(argv: list[Any]) -> list[Any]:
    """A command line with the values of `WITHHELD_OPTIONS` withheld (`--prompt X` and
    `--prompt=X`)."""
    out: list[Any] = []
    for item in argv:
        if out and isinstance(item, str) and out[-1] in WITHHELD_OPTIONS:
            out.append(withheld(WITHHELD_OPTIONS[out[-1]], item))
            continue
        option, eq, given = item.partition("=") if isinstance(item, str) else ("", "", "")
        out.append(f"{option}={withheld(WITHHELD_OPTIONS[option], given)}"
                   if eq and option in WITHHELD_OPTIONS else item)
    return out


WITHHELD = re.compile(r"<[a-z ]+ withheld: \d+ characters>\Z")


def withheld(what: str, value: str) -> str:
    """What stands for a text withheld whole: what it was and its length (a text withheld
    already, as a redacted report holds it, stays as it is)."""
    if WITHHELD.match(value):
        return value
    return f"<{what} withheld: {len(value)} characters>"


def machine_tag(run_id: str) -> str | None:
    """This machine's tag for the run `run_id`: HMAC-SHA256 keyed by its machine id (None
    where it has none to read)."""
    try:
        key = Path("/etc/machine-id").read_text().strip()
    except OSError:
        return None
    if not key:
        return None
    message = f"xdna-runlist-harness redaction {run_id}".encode()
    return hmac.new(key.encode(), message, hashlib.sha256).hexdigest()[:32]


def written_here(data: Any) -> bool:
    """Whether a redacted report's data was written on this machine (its `redaction.machine`
    is this machine's tag for its run)."""
    tag = mapping(mapping(data).get("redaction")).get("machine")
    return tag is not None and tag == machine_tag(str(mapping(data).get("run_id")))


_NUMBERED = re.compile(r"<([a-z-]+?)(?:-(\d{1,9}))?>")


def placeholder_numbers_in(data: Any) -> dict[str, int]:
    """The highest number of each kind of placeholder the strings of `data` hold
    (`<hostname>` counts 1)."""
    numbers: dict[str, int] = {}
    stack = [data]
    while stack:
        item = stack.pop()
        if item.__class__ is str:
            if "<" in item:
                for found in PLACEHOLDER.finditer(item):
                    parts = _NUMBERED.fullmatch(found.group(0))
                    if parts:
                        kind, number = parts.group(1), int(parts.group(2) or 1)
                        numbers[kind] = max(numbers.get(kind, 0), number)
        elif item.__class__ is dict:
            stack += item.values()
        elif item.__class__ is list:
            stack += [v for v in item if v.__class__ not in _PLAIN]
    return numbers


def redact(data: Any) -> Any:
    """A redacted copy of a report's data."""
    redactor = Redactor()
    redactor.learn(data)
    return redactor.data(data)
