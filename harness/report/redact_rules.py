"""What redaction replaces, one rule per form private data takes, each with its trigger.

A rule's trigger is what any text the rule could change holds, once lowercased: a string in
which no rule's trigger is found is passed by with one scan (`Redactor`'s fast path, a
case-sensitive search of the lowercased text: a search that ignores case is many times
slower), and a rule runs only where its own trigger is found. Each trigger starts with a
fixed character where it can, which lets the search skip ahead. Trigger and rule live side
by side, so the fast path is made of the rules and cannot drift from them;
tests/test_redaction_rules.py holds, for every rule, that each of its examples is changed
and that wherever its pattern matches, its trigger is found.

The names learned from a report and the machine (host, domain, user, machine id, keyed
serials) are the one rule whose trigger is not fixed: the names themselves
(`Redactor.replace_names`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import unquote

from harness.model.firmware import DEVICE_FIRMWARE, RELEASES
from harness.report.placeholders import PLACEHOLDER


class RuleHost(Protocol):
    """What a rule asks of the redactor that runs it (`harness.report.redact.Redactor`)."""

    kept_uuids: set[str]

    def placeholder(self, kind: str, value: str) -> str: ...

    def home(self, name: str) -> str: ...

    def replace_names(self, value: str, structured: bool) -> str: ...

    def redacted(self, value: str, versioned: bool, decoding: bool) -> str: ...

HEX = "[0-9A-Fa-f]"
LOW_HEX = "[0-9a-f]"                # in a trigger: the text is lowercased
UUID_TEXT = rf"{HEX}{{8}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{12}}"

# scheme://userinfo@host: the userinfo runs to the last @ before the host, so a password
# holding @ goes whole ("http://bob:p@ss@host")
URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/?#\s'\"<>]+)@(?=[^/?#\s'\"<>@]*)")
# user-info without a scheme, as a URL is typed (`bob:pw@127.0.0.1:52625`, `//bob:pw@h`):
# a token's leading `user:password@` (the password running to the last @ before the
# host, so one holding @ goes whole), or a `user@` before a host and a port (an e-mail
# address has no port)
BARE_USERINFO = re.compile(r"(?:(?<![^\s'\"<>=(\[{,;])|(?<=(?<!:)//))(?!(?i:mailto):)"
                           r"([A-Za-z0-9._~%!$&*+-]+:[^\s/?#'\"<>]*|"
                           r"[A-Za-z0-9._~%!$&*+-]+(?=@[^\s/?#@'\"<>:]+:\d))"
                           r"@(?=[^\s/?#@'\"<>]+)")
# a URL parameter named like a secret: api_token, client_secret, X-Amz-Signature,
# private_token, access_key, session, password, sig, auth, cookie, credential...
SECRET_WORDS = ("token", "secret", "passw", "pwd", "key", "sig", "auth", "session",
                "credential", "cookie")
SECRET_PARAM = re.compile(r"(?i)([&;][\w.\-\[\]]*(?:" + "|".join(SECRET_WORDS) +
                          r")[\w.\-\[\]]*=)([^&\s#'\"<>]+)")
# a value named as a secret anywhere, as configuration, environments and command lines
# name one: `password=x`, `HF_TOKEN=x`, `PASSWORD: x`, `"api_key": "x"`, `--token x`,
# `--client-secret=x`. The key's last part is a secret's word (`max_tokens`, `author`
# and `signal` are not), so the text around it is kept.
SECRET_KEY = (r"(?:[A-Za-z0-9]+[_.-])*(?:passw(?:or)?d|passphrase|pwd|secret|token|"
              r"(?:api|access|private|secret|client|ssh|auth|encryption|master|signing)"
              r"[_-]?key|apikey|auth|credentials?|cookie|session(?:[_-]?id)?|signature)")
NAMED_SECRET = re.compile(
    rf"(?i)(?<![A-Za-z0-9_.-])(?P<dash>--?)?(?P<key>{SECRET_KEY})(?P<sep>[\"']?\s*[=:]\s*|"
    r"[ \t]+(?=[^\s=:-]))"
    r"(?!<secret>)(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s,;&'\"<>)\]}]+)")
# secret words that are also words of prose and arithmetic ("GB per token = 12 GB/s"):
# alone and lowercase, one names a secret only where nothing stands before its = or :
PROSE_KEYS = frozenset({"token", "session", "auth", "cookie", "signature", "credential",
                        "credentials"})
# an option named like a secret, alone in a command line's list (its value the next item)
SECRET_OPTION = re.compile(rf"(?i)--?{SECRET_KEY}\Z")
NAMED_SECRET_WORDS = ("passw", "passphrase", "pwd", "secret", "token", "key", "auth",
                      "credential", "cookie", "session", "signature")
# Every value of a URL's query (or of a fragment made of parameters, as OAuth's
# `#access_token=`) is private unless its name is one of these: how a listing is paged,
# ordered or shown, which names nothing of anyone's. `?code=`, `?jwt=`, `?q=` go.
HARMLESS_PARAMS = frozenset({"page", "per_page", "limit", "offset", "sort", "order",
                             "direction", "format", "lang", "version", "v", "tab", "view",
                             "raw", "plain", "download", "stream"})
QUERY = re.compile(r"([?#])([^\s?#'\"<>]*=[^\s#'\"<>]*)")
QUERY_PARAM = re.compile(r"(^|[&;])([^&;=]*)=([^&;]*)")
AUTHORIZATION = re.compile(r"(?i)\b((?:authorization:\s*)?(?:bearer|basic)\s+)"
                           r"([A-Za-z0-9._~+/=-]{8,})")
# access tokens by their documented prefixes: Hugging Face, GitHub (classic and
# fine-grained), GitLab, Slack, OpenAI-style; each is a prefix ending in _ or - and a long
# run of letters and digits, which is what their trigger looks for
TOKEN = re.compile(r"(?<![\w-])(?:hf_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{16,}|"
                   r"github_pat_[A-Za-z0-9_]{16,}|glpat-[A-Za-z0-9_-]{16,}|"
                   r"xox[abposr]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9_-]{16,})(?![\w-])")
# AWS access key ids: a documented four-letter prefix (AKIA an IAM user's long-term key,
# ASIA a temporary STS key, ABIA an STS bearer token, ACCA a context-specific credential:
# AWS IAM User Guide, "IAM identifiers", unique ID prefixes) and 16 capitals or digits,
# 20 characters in all (AKIAIOSFODNN7EXAMPLE); the values the AWS CLI's credentials file
# and environment name (aws_secret_access_key, aws_session_token) are named secrets
AWS_KEY_ID = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])")
# a JSON Web Token (RFC 7519 section 3): the JWS or JWE compact serialization (RFC 7515
# section 7.1, RFC 7516 section 7.1), base64url parts joined by dots, the first a JSON
# object's encoding, which starts `{"` and so `eyJ`
JWT = re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*){0,3}")
# a disk's World Wide Name, as udev names it (/dev/disk/by-id/wwn-0x..., ID_WWN=0x...),
# lsblk and smartctl label it (WWN: ...), and SCSI and NVMe designators give it (naa.,
# eui.: SPC-4 NAA, the NVMe EUI-64 and NGUID): 16 or 32 hex digits
WWN = re.compile(r"(?i)(\bwwn-0x|\bwwn(?:[ _]?(?:id|number))?\s*[:=]\s*(?:0x)?|\bwwn\s+0x|"
                 r"\bid_wwn(?:_with_extension)?=(?:0x)?|\b(?:naa|eui)\.)"
                 r"([0-9a-f]{32}|[0-9a-f]{16})(?![0-9a-f])")
# smartctl's "LU WWN Device Id: 5 002538 e4ca1ab88": the NAA, the OUI and the vendor's id
# in groups (ataprint.cpp prints "%x %06x %09llx"), 16 or 32 hex digits in all
WWN_GROUPED = re.compile(r"(?i)(\bwwn device id:\s*)([0-9a-f]{1,16}(?: [0-9a-f]{1,16}){1,3})"
                         r"(?![0-9a-f])")
# a Wi-Fi network's name in a log line: after SSID or ESSID (wpa_supplicant's "SSID
# 'home'", "SSID='home'", iw's "SSID: home", iwconfig's ESSID:"home"), or a quoted network
# name (NetworkManager's "wireless network 'home'"); an SSID is 0 to 32 octets (IEEE
# 802.11 SSID element); and a NetworkManager connection's name ("Activation: starting
# connection 'home'"), which for a Wi-Fi network is its SSID unless renamed (nmcli's
# `connection.id` defaults to the SSID)
SSID = re.compile(r"(?i)(\be?ssid\s*[:=]?\s*|\b(?:wireless|wi-?fi) network\s+|"
                  r"\bconnection (?=['\"]))"
                  r"(\"[^\"\n]{1,32}\"|'[^'\n]{1,32}'|(?<=[:=\s])[^\s\"',;()\[\]]{1,32})")
# percent-encoding (RFC 3986 section 2.1) hides any of the forms above (quill5%40corp.example
# is an e-mail address): a token holding it is decoded and redacted again, after every
# other rule ran on it as it is
PERCENT_TOKEN = re.compile(r"[^\s'\"<>]*%[0-9A-Fa-f]{2}[^\s'\"<>]*")
EMAIL = re.compile(r"(?<![\w.+-])[\w.+%-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
# a home folder wherever it is mounted: /home/u, /var/home/u (Fedora Atomic), /nfs/home/u
HOME = re.compile(r"/(home|Users)/([^/\s'\"<>:;,`|)\]}]+)")
ROOT_HOME = re.compile(r"(?<![\w])/root(?=/|\b)")
DISK_UUID = re.compile(r"(?i)(\b(?:part)?uuid=|by-(?:part)?uuid/|\bluks-|rd\.luks\.uuid=|"
                       r"\bcryptdevice=(?:uuid=)?)"
                       rf"({UUID_TEXT}|{HEX}{{4}}-{HEX}{{4}}\b|{HEX}{{16}}\b)")
UUID = re.compile(rf"(?<![\w-]){UUID_TEXT}(?![\w-])")
# a serial where text labels one: "Serial Number: X", "S/N X", "SN: X", "Service Tag: X";
# its value holds a digit or is a run of capitals (a service tag), one word
SERIAL_TEXT = re.compile(r"(?i)(?<![a-z0-9])(serial(?:[ _-]?(?:number|num|no\.?|short))?|s/n|"
                         r"service[ _-]?tag|asset[ _-]?tag|sn(?=[:=#]))"
                         r"(\s*[\"']?\s*[:=#]\s*[\"']?\s*|(?<=number)\s+|(?<=no)\s+|"
                         r"(?<=s/n)\s+|(?<=tag)\s+)"
                         r"((?=[\w.:-]*\d|(?-i:[A-Z0-9]{5,}\b))[A-Za-z0-9][\w.:-]*[A-Za-z0-9])")
# a serial labelled without a colon ("serial S7KHNJ0X123456Z", as nvme-cli and lsblk's
# SERIAL column print one): a word of capitals and digits, both, of 6 or more
SERIAL_WORD = re.compile(r"(?i)\b(serial(?:[ _-]?(?:number|no\.?))?[ \t]+)"
                         r"((?-i:(?=[A-Z0-9]*[0-9])(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6,}))\b")
# a disk's persistent name, as udev makes it of its bus, model and serial
# (60-persistent-storage.rules: ID_BUS-ID_SERIAL, ID_SERIAL being MODEL_SERIAL):
# /dev/disk/by-id/nvme-Samsung_SSD_980_PRO_1TB_S7KHNJ0X123456Z-part1
DISK_ID = re.compile(r"(?i)(\bby-id/(?:ata|nvme|scsi|usb|mmc|sata|virtio|ieee1394|memstick|"
                     r"cciss|ide)-[^\s/'\"]*_)([A-Za-z0-9.]{4,}?)"
                     r"(?=(?:-part\d+|-\d+:\d+)?(?![\w.-]))")
MAC = re.compile(rf"(?<![\w:.-])(?:{HEX}{{2}}([:-]){HEX}{{2}}(?:\1{HEX}{{2}}){{4}}|"
                 rf"{HEX}{{4}}\.{HEX}{{4}}\.{HEX}{{4}})(?![\w:.-])")
# twelve hex digits are a MAC only where named one (`link/ether`, `HWaddr`, `MAC: `) or in
# an interface name made of one (enx..., wlx...): bare, they are as often a commit
MAC_BARE = re.compile(rf"(?i)(\b(?:mac(?:[ _-]?addr(?:ess)?)?|ether|hwaddr|lladdr)"
                      rf"[ \t:=]+|\b(?:enx|wlx))({HEX}{{12}})\b")
IPV4_TEXT = r"(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)"
IPV4 = re.compile(rf"(?<![\w.]){IPV4_TEXT}(?![\w.])")
# IPv6, with an IPv4 tail (::ffff:192.168.1.20) and a zone (fe80::1%eth0) taken whole
_H = f"{HEX}{{1,4}}"
IPV6 = re.compile(rf"(?<![\w:.])(?:(?:{HEX}|:)*::(?:{_H}:)*{IPV4_TEXT}|"
                  rf"(?:{_H}:){{6}}{IPV4_TEXT}|(?:{_H}:){{7}}{_H}|"
                  rf"(?:{_H}:){{1,7}}:(?:{_H}(?::{_H})*)?|::(?:{_H}(?::{_H})*)?)"
                  r"(?:%[\w.-]+)?(?![\w:]|\.\d)")
VERSION_VALUE = re.compile(r"\s*v?\d+(?:\.\d+)+(?:[-+~ ].*)?\Z", re.DOTALL)
# A dotted quad right after one of these words is a version ("firmware 1.1.2.65").
VERSION_BEFORE = re.compile(r"(?i)(?<![a-z])(?:version|firmware|fw|ver|release|v)"
                            r"[\s:=_\"'-]{0,3}\Z")
# ... and so is one right after a version and an arrow ("firmware 1.1.2.65 -> 1.1.2.70", as
# a continued report records what changed)
VERSION_ARROW = re.compile(r"\d+(?:\.\d+){2,}\s*->\s*\Z")
KEEP_IPS = {"127.0.0.1", "0.0.0.0", "::1", "::"}
# NPU firmware releases read as dotted quads; the ones the harness knows are public names of
# a release, never a machine's address ("firmware: failing 1.1.2.65 x2" in a factor table)
FIRMWARE_VERSIONS = frozenset(RELEASES) | frozenset(DEVICE_FIRMWARE.values())
# ... and so is any dotted quad on a line that speaks of firmware before it
FIRMWARE_LINE = re.compile(r"(?i)(?<![a-z])(?:firmware|fw)(?![a-z])")


@dataclass(frozen=True)
class RedactionRule:
    """One form of private data: where to look (`triggers`, regular expressions matched on
    the lowercased text: text holding none of them is never changed by this rule), what
    to replace (`apply`), and text it must change (`examples`)."""

    name: str
    triggers: tuple[str, ...]
    apply: Callable[[RuleHost, str, bool], str] = field(repr=False)
    examples: tuple[str, ...] = ()

    def trigger(self) -> re.Pattern[str]:
        """Its triggers as one pattern, to search the lowercased text with."""
        return _compiled("|".join(self.triggers) or r"(?!)")

    def fires(self, text: str) -> bool:
        return self.trigger().search(text.lower()) is not None


_CACHE: dict[str, re.Pattern[str]] = {}


def _compiled(source: str) -> re.Pattern[str]:
    found = _CACHE.get(source)
    if found is None:
        found = _CACHE[source] = re.compile(source)
    return found


def _userinfo(r: RuleHost, text: str, _: bool) -> str:
    return URL_USERINFO.sub(lambda m: m.group(1) + "<credentials>@", text)


def _bare_userinfo(r: RuleHost, text: str, _: bool) -> str:
    return BARE_USERINFO.sub("<credentials>@", text)


def _secret_param(r: RuleHost, text: str, _: bool) -> str:
    return SECRET_PARAM.sub(lambda m: m.group(1) + "<secret>", text)


def _named_secret(r: RuleHost, text: str, _: bool) -> str:
    def one(match: re.Match[str]) -> str:
        dash, key, sep, value = match.group("dash", "key", "sep", "value")
        if not dash and not ("=" in sep or ":" in sep):
            return match.group(0)     # `--token x` only as an option, never `the token x`
        if not dash and key in PROSE_KEYS and sep[:1].isspace():
            return match.group(0)
        quote = value[0] if value[0] in "'\"" else ""
        return f"{match.group(0)[:match.start('value') - match.start()]}{quote}<secret>{quote}"
    return NAMED_SECRET.sub(one, text)


def _query(r: RuleHost, text: str, _: bool) -> str:
    def one(match: re.Match[str]) -> str:
        return match.group(1) + QUERY_PARAM.sub(_param_value, match.group(2))
    return QUERY.sub(one, text)


def _param_value(match: re.Match[str]) -> str:
    lead, name, value = match.groups()
    kept = name.lower() in HARMLESS_PARAMS or not value or value == "<secret>"
    return f"{lead}{name}={value if kept else '<secret>'}"


def _aws(r: RuleHost, text: str, _: bool) -> str:
    return AWS_KEY_ID.sub(lambda m: r.placeholder("token", m.group(0)), text)


def _jwt(r: RuleHost, text: str, _: bool) -> str:
    return JWT.sub(lambda m: r.placeholder("token", m.group(0)), text)


def _wwn(r: RuleHost, text: str, _: bool) -> str:
    text = WWN.sub(lambda m: m.group(1) + r.placeholder("wwn", m.group(2).lower()), text)

    def grouped(match: re.Match[str]) -> str:
        digits = match.group(2).replace(" ", "").lower()
        if len(digits) not in (16, 32):
            return match.group(0)
        return match.group(1) + r.placeholder("wwn", digits)
    return WWN_GROUPED.sub(grouped, text)


def _ssid(r: RuleHost, text: str, _: bool) -> str:
    def one(match: re.Match[str]) -> str:
        label, name = match.groups()
        quote = name[0] if name[0] in "'\"" else ""
        bare = name[1:-1] if quote else name
        return f"{label}{quote}{r.placeholder('ssid', bare)}{quote}"
    return SSID.sub(one, text)


def _percent(r: RuleHost, text: str, versioned: bool) -> str:
    """Each token holding percent-encoding, read both as written and decoded: the reading
    that leaves less of it standing (a password's `%2F` is part of it as written,
    `quill5%40corp.example` an address once decoded); as written where decoding hides
    nothing."""
    def one(match: re.Match[str]) -> str:
        token = match.group(0)
        decoded = unquote(token, errors="replace")
        if decoded == token:
            return token
        as_written = r.redacted(token, versioned, False)
        as_decoded = r.redacted(decoded, versioned, True)
        if as_decoded == decoded or _standing(as_written) <= _standing(as_decoded):
            return as_written
        return as_decoded
    return PERCENT_TOKEN.sub(one, text)


def _standing(text: str) -> int:
    """How much of a redacted text is not a placeholder."""
    return len(PLACEHOLDER.sub("", text))


def _authorization(r: RuleHost, text: str, _: bool) -> str:
    return AUTHORIZATION.sub(lambda m: m.group(1) + "<secret>", text)


def _token(r: RuleHost, text: str, _: bool) -> str:
    return TOKEN.sub(lambda m: r.placeholder("token", m.group(0)), text)


def _email(r: RuleHost, text: str, _: bool) -> str:
    return EMAIL.sub(lambda m: r.placeholder("email", m.group(0).lower()), text)


def _home(r: RuleHost, text: str, _: bool) -> str:
    text = HOME.sub(lambda m: f"/{m.group(1)}/{r.home(m.group(2))}", text)
    return ROOT_HOME.sub("~", text)


def _disk_uuid(r: RuleHost, text: str, _: bool) -> str:
    return DISK_UUID.sub(lambda m: m.group(1) + r.placeholder("uuid", m.group(2).lower()), text)


def _uuid(r: RuleHost, text: str, _: bool) -> str:
    return UUID.sub(lambda m: m.group(0) if m.group(0).lower() in r.kept_uuids
                    else r.placeholder("uuid", m.group(0).lower()), text)


def _serial(r: RuleHost, text: str, _: bool) -> str:
    text = SERIAL_TEXT.sub(lambda m: m.group(1) + m.group(2) + r.placeholder("serial",
                                                                           m.group(3)), text)
    text = SERIAL_WORD.sub(lambda m: m.group(1) + r.placeholder("serial", m.group(2)), text)
    return DISK_ID.sub(lambda m: m.group(1) + r.placeholder("serial", m.group(2)), text)


def _mac(r: RuleHost, text: str, _: bool) -> str:
    text = MAC_BARE.sub(lambda m: m.group(1) + r.placeholder("mac", _mac_key(m.group(2))),
                        text)
    return MAC.sub(lambda m: r.placeholder("mac", _mac_key(m.group(0))), text)


def _mac_key(text: str) -> str:
    """One MAC however it is written (3c:7c:..., 3c-7c-..., 3c7c.3f1a..., 3c7c3f...)."""
    return re.sub("[^0-9a-f]", "", text.lower())


def _ipv6(r: RuleHost, text: str, _: bool) -> str:
    return IPV6.sub(lambda m: m.group(0) if m.group(0) in KEEP_IPS
                    else r.placeholder("ip", m.group(0).lower()), text)


def _in_address(text: str, match: re.Match[str]) -> bool:
    """The dotted quad is a URL's host or a peer with its port (//10.1.2.3/, @10.1.2.3,
    10.1.2.3:8080), not a version."""
    return text[max(0, match.start() - 1):match.start()] in ("/", "@") or \
        text[match.end():match.end() + 1] == ":"


def _ipv4(r: RuleHost, text: str, versioned: bool) -> str:
    if versioned and VERSION_VALUE.match(text):
        return text

    def one(match: re.Match[str]) -> str:
        address = match.group(0)
        before = text[max(0, match.start() - 24):match.start()]
        line = text[text.rfind("\n", 0, match.start()) + 1:match.start()]
        if address in KEEP_IPS or address.startswith("127.") or \
                address in FIRMWARE_VERSIONS or (FIRMWARE_LINE.search(line) and not
                                                 _in_address(text, match)) or \
                VERSION_BEFORE.search(before[-16:]) or VERSION_ARROW.search(before):
            return address          # loopback, or a version number ("firmware 1.1.2.65")
        return r.placeholder("ip", address)
    return IPV4.sub(one, text)


def _names(r: RuleHost, text: str, structured: bool) -> str:
    return r.replace_names(text, structured)


NAMES = "names"
PERCENT = "percent-encoded"
RULES: tuple[RedactionRule, ...] = (
    # first: a percent-encoded token, as written and decoded (the rules below, on each)
    RedactionRule(PERCENT, (rf"%{LOW_HEX}{{2}}",), _percent,
         ("mail quill5%40corp-canary.example", "by %6Aane.doe%40corp.example today")),
    RedactionRule("url-credentials", ("://",), _userinfo,
         ("http://bob:p@ss-SECRET7@example.org/v1", "ftp://alice:hunter2@files")),
    RedactionRule("userinfo-without-scheme", ("@",), _bare_userinfo,
         ("--url=quill5:pw%2FSECRETA@127.0.0.1:52625", "proxy bob:p@ss@proxy.example",
          "//bob:hunter2@files", "serve bob@127.0.0.1:52625/v1")),
    # parameters after & or ; outside a query too (a query's every value goes below)
    RedactionRule("secret-parameter", tuple(rf"\{c}[\w.\-\[\]]*=" for c in "&;"),
         _secret_param,
         ("x&X-Amz-Signature=9f8e7d", "a;private_token=p1", "a=1&api_token=abc123",
          "a=1&client_secret=s3cr3t", "k;session=42f", "k;sig=42f", "u&access_key=AK1",
          "u&passwd=pw1",
          "u&pwd=pw2", "u&sig=zz1", "u&auth=zz2", "u&credential=c1", "u&cookie=c2")),
    RedactionRule("named-secret", NAMED_SECRET_WORDS, _named_secret,
         ("echo password=hunter2", "token=abcQ1", "HF_TOKEN=L12345", "PASSWORD: K77",
          "--password J88", "--client-secret=M99", '{"api_key": "N11"}',
          "passphrase='two words'", "pwd=x1", "auth: y2", "credentials=c3", "cookie: c4",
          "session_id=s5", "signature=s6",
          "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
          "AWS_SESSION_TOKEN=FwoGZXIvYXdzEBYaDGH0wJalrXUtnFEMI")),
    RedactionRule("query-value", (r"\?[^\s?#'\"<>=]*=", r"#[^\s?#'\"<>=]*="), _query,
         ("GET /cb?code=QVSECRET1&state=QVSECRET2", "https://h/x?jwt=QVSECRET3",
          "https://h/#id=QVSECRET4", "https://h/s?q=my+private+search&page=2",
          "GET /v1?api_token=abc123", "page#session=42f", "/?passwd=pw1")),
    RedactionRule("aws", ("akia", "asia", "abia", "acca"), _aws,
         ("key AKIAIOSFODNN7EXAMPLE", "ASIAIOSFODNN7EXAMPLE", "ABIAIOSFODNN7EXAMPLE",
          "ACCAIOSFODNN7EXAMPLE")),
    RedactionRule("jwt", ("eyj",), _jwt,
         ("Authorization eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ6ZWxkYTkifQ.c2lnbmF0dXJl",)),
    RedactionRule("wwn", ("wwn", "naa.", "eui."), _wwn,
         ("/dev/disk/by-id/wwn-0x5002538e40a1b2c3", "WWN: 5002538e40a1b2c3",
          "ID_WWN=0x5002538e40a1b2c3", "naa.5002538e40a1b2c3", "eui.0025388b91b2c3d4",
          "WWN 0x5002538e4ca1ab99", "LU WWN Device Id: 5 002538 e4ca1ab88")),
    RedactionRule("ssid", ("ssid", "network '", 'network "', "connection '",
                           'connection "'), _ssid,
         ("wlan0: Trying to associate with SSID 'CanaryNet'", "SSID=CanaryNet freq=5180",
          'ESSID:"Canary Net"', "Connected to wireless network 'CanaryNet'",
          'joined Wi-Fi network "CanaryNet"', "Activation: starting connection 'CanaryBeta'",
          'policy: auto-activating connection "CanaryGamma"')),
    RedactionRule("authorization", ("bearer", "basic"), _authorization,
         ("Authorization: Bearer abcdefgh12345678", "basic dXNlcjpwYXNzd29yZA==")),
    RedactionRule("token", (r"_[a-z0-9_]{16}", r"-[a-z0-9_-]{10}"), _token,
         ("HF_TOKEN hf_AbCdEfGhIjKlMnOpQrStUvWx", "ghp_0123456789abcdefABCDEF",
          "gho_0123456789abcdefABCDEF", "ghu_0123456789abcdefABCDEF",
          "ghs_0123456789abcdefABCDEF", "ghr_0123456789abcdefABCDEF",
          "github_pat_11ABCDEFG0123456789_abcdef",
          "glpat-0123456789abcdefABCD", "xoxb-1234567890-abcdef", "sk-abcdefghijklmnop1234")),
    RedactionRule("email", ("@",), _email, ("mail jane.doe+npu@example.org",)),
    RedactionRule(NAMES, (), _names),
    RedactionRule("home", ("/home/", "/users/", "/root"), _home,
         ("/home/zelda9/x", "/Users/zelda9/x", "/root/.cache")),
    RedactionRule("disk-uuid", ("uuid=", "uuid/", "luks-", "cryptdevice="), _disk_uuid,
         ("root=UUID=1234-ABCD", "by-uuid/0123456789abcdef", "luks-1234-abcd",
          "cryptdevice=0123456789ABCDEF:root")),
    RedactionRule("uuid", (rf"-{LOW_HEX}{{4}}-{LOW_HEX}{{4}}-",), _uuid,
         ("product 3f1c2b9a-7e4d-4a21-9c0b-5d6e7f801234",)),
    RedactionRule("serial", ("serial", "s/n", "sn:", "sn=", "sn#", "service tag", "service_tag",
                    "service-tag", "servicetag", "asset tag", "asset_tag", "asset-tag",
                    "assettag", "by-id/"), _serial,
         ("Serial Number: PF4X7K2Q", "S/N PF4X7K2Q", "SN: 8812345", "sn=8812345",
          "SN#8812345", "Service Tag: JXQ4Z53", "service_tag JXQ4Z53", "Service-Tag JXQ4Z53",
          "ServiceTag: JXQ4Z53", "asset tag=A12345", "asset_tag A12345", "Asset-Tag A12345",
          "AssetTag: A12345", "serial S7KHNJ0X123456Z", "ID_SERIAL_SHORT=S7KHNJ0X123456Z",
          "/dev/disk/by-id/nvme-Samsung_SSD_980_PRO_1TB_S7KHNJ0X123456Z-part1")),
    RedactionRule("mac", (rf":{LOW_HEX}{{2}}:{LOW_HEX}{{2}}:", rf"-{LOW_HEX}{{2}}-{LOW_HEX}{{2}}-",
                 rf"\.{LOW_HEX}{{4}}\.{LOW_HEX}{{4}}", "mac ", "mac:", "mac=", "mac\t",
                 "macaddr", "mac_addr", "mac-addr", "ether", "hwaddr", "lladdr", "enx", "wlx"),
         _mac, ("eth0 3c:7c:3f:1a:2b:4d", "nic 3c-7c-3f-1a-2b-4d", "cisco 3c7c.3f1a.2b4d",
                "MAC 3c7c3f1a2b4d", "MAC:3c7c3f1a2b4d", "mac=3c7c3f1a2b4d", "mac\t3c7c3f1a2b4d",
                "macaddr 3c7c3f1a2b4d", "MAC_ADDR 3c7c3f1a2b4d", "mac-address: 3c7c3f1a2b4d",
                "link/ether 3c7c3f1a2b4d", "HWaddr 3c7c3f1a2b4d",
                "lladdr 3c7c3f1a2b4d", "enx3c7c3f1a2b4d up", "wlx3c7c3f1a2b4d up")),
    RedactionRule("ipv6", ("::", rf":{LOW_HEX}{{1,4}}:{LOW_HEX}{{1,4}}:"), _ipv6,
         ("from ::ffff:192.168.1.20", "2001:db8:85a3:0:0:8a2e:370:7334", "fe80::1%eth0")),
    RedactionRule("ipv4", (r"\.\d{1,3}\.\d{1,3}\.",), _ipv4, ("peer 192.168.50.7",)),
)
