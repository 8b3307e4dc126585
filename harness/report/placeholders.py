"""Redaction's placeholders as text holds them: finding them (a field of the harness's own
that holds one was garbled by a redaction), and a redacted name as a file may be called."""

from __future__ import annotations

import re
from typing import Any

# every placeholder redaction writes (`harness.report.redact_rules`, which reads it from
# here: `report check` finds them without compiling the rules that write them)
PLACEHOLDER = re.compile(r"<(?:hostname|domain|user|machine-id|serial|uuid|mac|ip|email|"
                         r"token|wwn|ssid)(?:-\d+)?>|<credentials>|<secret>")

__all__ = ["PLACEHOLDER", "file_safe", "garbled", "garbled_entry", "placeholders_in"]


def file_safe(name: str) -> str:
    """A redacted name as a file may be called: each placeholder without its brackets
    (`r_<user-1>.yaml` -> `r_user-1.yaml`), which a shell reads as redirections."""
    return PLACEHOLDER.sub(lambda match: match.group(0)[1:-1], name)


def _own_fields(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    """The harness's own words in a report: what it ran and how (a profile, a flavour, a
    plan's name), never a machine's or a user's (a case's name is its author's)."""
    backend = _section(doc.get("backend"))
    driver = _section(backend.get("driver"))
    case = _section(doc.get("case"))
    settings = _section(doc.get("settings"))
    fields = [("command", doc.get("command")), ("backend.kind", backend.get("kind")),
              ("backend.profile", backend.get("profile")),
              ("backend.driver.flavour", driver.get("flavour")),
              ("case.kind", case.get("kind")), ("settings.flow", settings.get("flow"))]
    deviations = backend.get("deviations")
    if isinstance(deviations, list):
        fields += [(f"backend.deviations[{i}]", d) for i, d in enumerate(deviations)]
    plans = doc.get("plans")
    if isinstance(plans, list):
        for i, plan in enumerate(plans):
            if isinstance(plan, dict):
                fields += [(f"plans[{i}].{key}", plan.get(key)) for key in _PLAN_OWN]
    return fields


# a plan's fields that are the harness's words (its name, the spec it was made from) and a
# trial's (the plan it belongs to, how it ended)
_PLAN_OWN = ("name", "spec")
_TRIAL_OWN = ("plan", "status", "state")


def garbled_entry(kind: str, value: Any) -> list[str]:
    """`garbled` for one journal entry (`kind`: trial, plan, ...) as it is written."""
    own = _TRIAL_OWN if kind == "trial" else _PLAN_OWN if kind == "plan" else ()
    body = _section(value)
    return [f"a {kind} entry's {key}: {body[key]!r} holds a redaction placeholder where the "
            "harness wrote its own word: the redaction garbled this report"
            for key in own if isinstance(body.get(key), str) and placeholders_in(body[key])]


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
