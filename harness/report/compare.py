"""One matrix across reports: a column per report, labelled by what differs between them
(firmware, driver flavour and parameters, XRT, profile, machine), a row per plan (or per
sweep cell), outcome counts in the cells, and the cells that differ marked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.model.results import counts_text
from harness.report.header import System, read_header
from harness.report.model import is_simulated, source_label
from harness.report.render import md_table, record_label


def attributes(data: dict[str, Any]) -> dict[str, str]:
    header = read_header(data)
    env, backend = header.environment, header.backend.raw
    driver, system = env.driver, env.system
    if is_simulated(backend):
        source = source_label(backend)
    elif header.backend.kind == "flm-server":
        source = "flm serve"
    else:
        source = "hardware"
    out = {
        "profile": source,
        "firmware": str(env.npu.firmware or "-"),
        "driver": f"{driver.flavour or '-'} {driver.version or ''}".strip(),
        "XRT": str(env.xrt.pyxrt.xrt_version or "-"),
        "machine": _machine(system),
        "case": str(header.case.name),
    }
    for name, value in driver.parameters.items():
        out[f"param {name}"] = str(value)
    return out


def _machine(system: System) -> str:
    """The machine as a column names it: its host name where the report keeps one, else
    its tag (a redacted report's host name is a placeholder every report shares)."""
    hostname = system.hostname if system.hostname and \
        not str(system.hostname).startswith("<") else None
    if hostname:
        return str(hostname)
    identity = system.identity()
    return f"machine {identity[:8]}" if identity else str(system.hostname or "-")


def row_outcomes(data: dict[str, Any]) -> dict[str, dict[str, int]]:
    sweep = data.get("sweep")
    if sweep:
        return {f"depth {c['depth']} chunk {c['chunk']}": c.get("counts") or {}
                for c in sweep.get("cells") or []}
    rows = {}
    for plan in data.get("plans") or []:
        rows[record_label(plan)] = (plan.get("summary") or {}).get("by_state") or {}
    return rows


def _column_label(attrs: dict[str, str], differing: list[str], data: dict[str, Any]) -> str:
    """What tells this report's column apart, always opened by where its results came
    from when that was no machine: a SIMULATED or EMULATED column is never unlabelled,
    whatever it shares with the others."""
    parts = [f"{k} {attrs.get(k, '-')}" if k not in ("profile", "machine")
             else attrs.get(k, "-") for k in differing]
    if "profile" not in differing and is_simulated(read_header(data).backend.raw):
        parts.insert(0, attrs["profile"])
    if not differing:
        parts.append(f"run {str(data.get('run_id', '?'))[:6]}")
    return ", ".join(parts)


@dataclass
class Matrix:
    files: list[str]
    labels: list[str]
    differing: list[str]
    rows: list[tuple[str, list[str], list[bool]]]     # label, cells, marked


def build(reports: list[tuple[str, dict[str, Any]]]) -> Matrix:
    attrs = [attributes(data) for _, data in reports]
    keys = []
    for a in attrs:
        keys += [k for k in a if k not in keys]
    differing = [k for k in keys if len({a.get(k, "-") for a in attrs}) > 1]
    labels = [_column_label(a, differing, data) for a, (_, data) in zip(attrs, reports,
                                                                       strict=True)]
    outcomes = [row_outcomes(data) for _, data in reports]
    row_keys: list[str] = []
    for table in outcomes:
        row_keys += [k for k in table if k not in row_keys]
    rows = []
    for key in row_keys:
        cells = [table.get(key) for table in outcomes]
        present = [frozenset(c) for c in cells if c]
        baseline = present[0] if present else frozenset()
        marked = [c is not None and bool(c) and frozenset(c) != baseline for c in cells]
        rows.append((key, [counts_text(c) if c else "-" for c in cells], marked))
    return Matrix([name for name, _ in reports], labels, differing, rows)


def render_text(matrix: Matrix) -> str:
    header = ["plan"] + [f"[{chr(65 + i)}]" for i in range(len(matrix.labels))]
    table = [[key] + [c + (" *" if m else "") for c, m in zip(cells, marks, strict=True)]
             for key, cells, marks in matrix.rows]
    widths = [max(len(str(r[i])) for r in [header] + table) for i in range(len(header))]
    lines = [_intro(matrix), ""]
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in table]
    lines += ["", "* outcomes differ from the first report with this row", "columns:"]
    lines += [f"  [{chr(65 + i)}] {label}  ({name})"
              for i, (label, name) in enumerate(zip(matrix.labels, matrix.files, strict=True))]
    return "\n".join(lines) + "\n"


def render_markdown(matrix: Matrix) -> str:
    header = ["plan"] + matrix.labels
    rows = [[key] + [f"**{c}** ≠" if m else c for c, m in zip(cells, marks, strict=True)]
            for key, cells, marks in matrix.rows]
    lines = [f"## {_intro(matrix)}", ""] + md_table(header, rows)
    lines += ["", "≠ marks outcomes that differ from the first report's.", "", "Reports:", ""]
    lines += [f"{i + 1}. {label}: `{name}`"
              for i, (label, name) in enumerate(zip(matrix.labels, matrix.files, strict=True))]
    return "\n".join(lines) + "\n"


def _intro(matrix: Matrix) -> str:
    what = ", ".join(matrix.differing) if matrix.differing else "nothing recorded (same setup)"
    return f"compare {len(matrix.files)} reports; columns differ by: {what}"
