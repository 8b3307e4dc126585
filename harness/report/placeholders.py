"""Redaction's placeholders as text holds them: finding them (a field of the harness's own
that holds one was garbled by a redaction), and a redacted name as a file may be called."""

from __future__ import annotations

import re
from typing import Any

# every placeholder redaction writes (`harness.report.redact_rules`, which reads it from
# here: `report check` finds them without compiling the rules that write them)
PLACEHOLDER = re.compile(r"<(?:hostname|domain|user|machine-id|serial|uuid|mac|ip|email|"
                         r"token|wwn|ssid)(?:-\d+)?>|<credentials>|<secret>")

__all__ = ["PLACEHOLDER", "file_safe", "garbled", "placeholders_in"]


def file_safe(name: str) -> str:
    """A redacted name as a file may be called: each placeholder without its brackets
    (`r_<user-1>.yaml` -> `r_user-1.yaml`), which a shell reads as redirections."""
    return PLACEHOLDER.sub(lambda match: match.group(0)[1:-1], name)


def _own_fields(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    """The harness's own words in a report: what it ran and how (a profile, a flavour, a
    plan's name), never a machine's or a user's."""
    backend = _section(doc.get("backend"))
    driver = _section(backend.get("driver"))
    case = _section(doc.get("case"))
    settings = _section(doc.get("settings"))
    fields = [("command", doc.get("command")), ("backend.kind", backend.get("kind")),
              ("backend.profile", backend.get("profile")),
              ("backend.driver.flavour", driver.get("flavour")), ("case.name", case.get("name")),
              ("settings.flow", settings.get("flow"))]
    deviations = backend.get("deviations")
    if isinstance(deviations, list):
        fields += [(f"backend.deviations[{i}]", d) for i, d in enumerate(deviations)]
    plans = doc.get("plans")
    if isinstance(plans, list):
        fields += [(f"plans[{i}].name", p.get("name")) for i, p in enumerate(plans)
                   if isinstance(p, dict)]
    return fields


def garbled(doc: dict[str, Any]) -> list[str]:
    """Redaction placeholders in the harness's own fields: a name replaced where it was the
    report's own word (a user named `staging` and the profile `staging,...`)."""
    return [f"{where}: {value!r} holds a redaction placeholder where the harness wrote its "
            "own word: the redaction garbled this report"
            for where, value in _own_fields(doc)
            if isinstance(value, str) and placeholders_in(value)]


def _section(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def placeholders_in(value: str) -> list[str]:
    """The redaction placeholders a text holds (a garbled field of the harness's own)."""
    return PLACEHOLDER.findall(value)
