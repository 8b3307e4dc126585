"""A typed outcomes table: what a user saw, per depth or per attempt (docs/diagnosis.md,
"The outcomes table").

Columns are separated by whitespace, tabs, commas or ``|`` (a Markdown pipe table with
its ``---`` line is fine); ``#`` starts a comment; the first row names the columns, in
any case: ``depth`` (or ``layers``: the model's layers, so the engine's own commands)
and ``result`` (or ``outcome``, ``state``) are required; ``plan`` (the harness's plan
syntax, e.g. ``21+21``, ``max:24``), ``trials`` (``k/n``: k of n trials ended so, the
other n-k the other way; or a bare count), ``attempt`` (one row per attempt), ``seconds``
(submit to failure), ``timer`` (the driver's timer in force: seconds, ``20s``, ``2000ms``,
a module parameter as set, ``timeout_in_sec=20`` or ``tdr_timeout_ms=2000``, read by the
flavour row that has that parameter, or ``>16``: longer than 16 s, by how much not
noted), ``workload`` (``noop`` or ``engine``), ``machine`` and ``model`` are optional. A
result is an ERT state (``TIMEOUT``, ``ERT_CMD_STATE_TIMEOUT``, ``COMPLETED``, ``ERROR``,
``ABORT``, ``NEW``, ...) or ok/pass/completed, fail/failed, hang, timeout. Each group of
rows of one machine, model, workload, plan and timer becomes one plan of the diagnosis (an
`Arm`, its times read against its own timer where the row gives one); two rows of one
group whose trials are k/n of the same n, with the k adding up to n (``TIMEOUT 4/10`` and
``COMPLETED 6/10``), are the same n trials said twice. A row that cannot be read is named
with why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.model.drivers import FLAVOURS
from harness.model.errors import PlanError
from harness.model.ert import state_from_name
from harness.model.plan import parse_plan, plan_label
from harness.report.diagnosis.artefacts.artefact_text import ArtefactText, Claim
from harness.report.diagnosis.vocabulary import NOOP, UNKNOWN_WORK, WORK, Arm, Observed
from harness.report.header import DriverTimer, Timers
from harness.report.timing import AT_ONCE, classify

KIND = "outcomes-table"
TIMER_UNKNOWN = "timer-unknown"      # not at once, and the driver's timer is not known
ALIASES = {"depth": "depth", "layers": "layers", "result": "result", "outcome": "result",
           "state": "result", "plan": "plan", "trials": "trials", "attempt": "attempt",
           "seconds": "seconds", "timer": "timer", "workload": "workload",
           "machine": "machine", "model": "model"}
SUCCESS = ("ok", "pass", "passed", "completed", "complete", "success", "succeeded",
           "works", "done")
FAILURE = {"fail": "FAILED", "failed": "FAILED", "failure": "FAILED", "hang": "HANG",
           "hangs": "HANG", "hung": "HANG", "timeout": "TIMEOUT"}
WORKLOADS = {"noop": NOOP, "nop": NOOP, "engine": WORK, "work": WORK}
MAX_DEPTH = 100_000
_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?$")
_TRIALS = re.compile(r"^(?P<k>\d{1,6})(?:/(?P<n>\d{1,6}))?$")
_TIMER = re.compile(r"^(?P<longer>>\s?)?(?:(?P<name>[a-z][a-z0-9_]{1,40})=)?"
                    r"(?P<value>\d{1,7}(?:\.\d{1,3})?)\s?(?P<unit>ms|s|sec)?$")
MAX_TIMER_S = 1e6


@dataclass(frozen=True)
class RowTimer:
    """The driver's timer a row ran under: its seconds, as the row said it, and whether it
    was only "longer than" that."""

    seconds: float
    text: str
    longer: bool = False
    checks: int = 1              # the periods the named flavour lets pass before a hang

    def timers(self) -> Timers:
        """The timer as a report's `timers`: from the value to as many periods as the
        flavour whose parameter it names checks (the value alone otherwise)."""
        if self.longer:          # only "longer than": no window a time can be read against
            return Timers(driver=DriverTimer(source=f"the table: {self.text}"))
        return Timers(driver=DriverTimer(flavour=None, kernel=None, earliest_s=self.seconds,
                                         latest_s=self.seconds * self.checks,
                                         source=f"the table: {self.text}"))


def timer_of(text: str) -> RowTimer | str:
    """A timer cell, read; or why it cannot be."""
    match = _TIMER.match(text.strip())
    if match is None:
        return (f"timer {text!r} is neither seconds (20, 20s, 2000ms), a module parameter "
                "(timeout_in_sec=20) nor >N")
    value = float(match["value"])
    name = match["name"]
    if name is not None:
        row = next((r for r in FLAVOURS.values() if r.parameter == name), None)
        if row is None:
            known = ", ".join(sorted({r.parameter for r in FLAVOURS.values() if r.parameter}))
            return f"timer {text!r} names no driver's timeout parameter ({known})"
        seconds, checks = value * row.unit_s, max(1, row.silent_checks)
    else:
        seconds, checks = (value / 1000.0 if match["unit"] == "ms" else value), 1
    if not 0 < seconds < MAX_TIMER_S:
        return f"timer {text!r} is out of range"
    return RowTimer(seconds, text.strip(), bool(match["longer"]), checks)


@dataclass(frozen=True)
class OutcomeRow:
    """One row, read: its line, its group's key and its trials."""

    index: int
    depth: int
    chunks: tuple[int, ...]
    plan: str | None
    state: str                 # COMPLETED or the failing state
    ended_so: int              # trials that ended with `state`
    otherwise: int             # trials that ended the other way
    seconds: float | None
    workload: str
    machine: str | None
    model: str | None
    timer: RowTimer | None = None
    trials_of: int | None = None    # n, where trials were given as k/n


def split_cells(line: str) -> list[str]:
    """A row's cells: by `|` (the edges' empty cells kept: `fit` decides), else tabs,
    else commas, else runs of whitespace."""
    text = line.split("#", 1)[0].strip()
    if "|" in text:
        return [c.strip() for c in text.split("|")]
    if "\t" in text:
        return [c.strip() for c in text.split("\t")]
    if "," in text:
        return [c.strip() for c in text.split(",")]
    return text.split()


def fit(cells: list[str], columns: int) -> list[str]:
    """The cells of a row against the header's count: a Markdown row's empty edge cells
    dropped while there are too many, missing trailing cells (optional values left out)
    read as empty."""
    cells = list(cells)
    while len(cells) > columns and cells and cells[0] == "":
        cells.pop(0)
    while len(cells) > columns and cells and cells[-1] == "":
        cells.pop()
    return cells + [""] * (columns - len(cells))


def header_of(line: str) -> list[str] | None:
    """The columns of a header row, or None when the line is not one."""
    cells = [c.lower() for c in split_cells(line) if c]
    names = [ALIASES.get(c) for c in cells]
    if None in names or len(set(names)) != len(names):
        return None
    if not ({"depth", "layers"} & set(names)) or "result" not in names:
        return None
    return [n for n in names if n is not None]


def result_state(text: str) -> str | None:
    """COMPLETED, a failing state (TIMEOUT, ERROR, ..., FAILED, HANG), or None."""
    word = text.strip()
    if word.lower() in SUCCESS:
        return "COMPLETED"
    if word.lower() in FAILURE:
        return FAILURE[word.lower()]
    try:
        return state_from_name(word).name
    except ValueError:
        return None


def read_row(index: int, cells: list[str], columns: list[str]) -> OutcomeRow | str:
    """A row, or why it cannot be read."""
    if len([c for c in cells if c]) > len(columns):
        return f"{len([c for c in cells if c])} cells where the header names {len(columns)}"
    value = dict(zip(columns, fit(cells, len(columns)), strict=True))
    depth_text = value.get("depth") or value.get("layers") or ""
    if not depth_text.isdigit() or not 0 < int(depth_text) <= MAX_DEPTH:
        return f"depth {depth_text!r} is not a whole number from 1 to {MAX_DEPTH}"
    depth = int(depth_text)
    state = result_state(value["result"])
    if state is None:
        return (f"result {value['result']!r} is neither an ERT state nor one of "
                f"{', '.join(SUCCESS[:3])}, fail, hang, timeout")
    plan = value.get("plan") or None
    try:
        chunks = parse_plan(plan, depth) if plan else (depth,)
    except PlanError as err:
        return str(err)
    trials = (value.get("trials") or "1").strip()
    counted = _TRIALS.match(trials)
    if not counted or (counted["n"] and int(counted["n"]) < int(counted["k"])):
        return f"trials {trials!r} is neither k/n (k of n, k <= n) nor a count"
    ended = int(counted["k"])
    otherwise = int(counted["n"]) - ended if counted["n"] else 0
    seconds_text = value.get("seconds") or ""
    try:
        seconds = float(seconds_text) if seconds_text else None
    except ValueError:
        return f"seconds {seconds_text!r} is not a number"
    if seconds is not None and not 0 <= seconds < 1e7:
        return f"seconds {seconds_text!r} is out of range"
    timer_text = value.get("timer") or ""
    timer = timer_of(timer_text) if timer_text else None
    if isinstance(timer, str):
        return timer
    workload_text = (value.get("workload") or "").lower()
    if workload_text and workload_text not in WORKLOADS:
        return f"workload {value['workload']!r} is neither noop nor engine"
    workload = WORKLOADS.get(workload_text) or (WORK if "layers" in value else UNKNOWN_WORK)
    return OutcomeRow(index, depth, tuple(chunks), plan, state, ended, otherwise, seconds,
                      workload, value.get("machine") or None, value.get("model") or None,
                      timer, int(counted["n"]) if counted["n"] else None)


def parse(text: ArtefactText, free: set[int], observed: Observed) -> Claim | None:
    order = sorted(free)
    start = next((i for i in order if header_of(text.lines[i]) is not None), None)
    if start is None:
        return None
    columns = header_of(text.lines[start]) or []
    claim = Claim("an outcomes table (" + ("per attempt" if "attempt" in columns
                                           else "per depth") + ")", {start})
    rows: list[OutcomeRow] = []
    for index in (i for i in order if i > start):
        line = text.lines[index]
        body = line.split("#", 1)[0].strip()
        if not body:
            if line.strip():
                claim.lines.add(index)        # a comment
                continue
            if rows:
                break
            continue
        if _SEPARATOR.match(body):
            claim.lines.add(index)
            continue
        row = read_row(index, split_cells(line), columns)
        claim.lines.add(index)
        if isinstance(row, str):
            claim.notes.append(f"line {index + 1} was not read: {row}")
        else:
            rows.append(row)
    if not rows:
        claim.notes.append("it has no row that could be read")
    _arms(text, rows, observed)
    return claim


def _arms(text: ArtefactText, rows: list[OutcomeRow], observed: Observed) -> None:
    groups: dict[tuple[object, ...], Arm] = {}
    said: dict[tuple[object, ...], list[OutcomeRow]] = {}
    for row in rows:
        timer = (row.timer.seconds, row.timer.longer) if row.timer else None
        key = (row.machine, row.model, row.workload, row.chunks, timer)
        arm = groups.get(key)
        if arm is None:
            name = row.plan or str(row.depth)
            label = plan_label(name, list(row.chunks)) + (f" on {row.machine}" if row.machine
                                                          else "") + \
                (f" (timer {row.timer.text})" if row.timer else "")
            arm = Arm(file=text.file, position=len(groups), name=name, label=label,
                      workload=row.workload, stand_in=False,
                      group=f"{text.file}#{row.workload}#{row.model}",
                      runs=list(row.chunks), machine=row.machine, model=row.model,
                      line=row.index + 1)
            if row.timer is not None:
                arm.timers, arm.timer_s = row.timer.timers(), row.timer.seconds
                arm.timer_longer = row.timer.longer
            groups[key] = arm
        pair = _said_before(said.setdefault(key, []), row)
        said[key].append(row)
        if pair is not None:
            # the same n trials as the earlier row: this row names what its "other way" was
            _count(arm, pair, _other(pair.state), -row.ended_so, observed, timed=False)
            _count(arm, row, row.state, row.ended_so, observed)
            continue
        _count(arm, row, row.state, row.ended_so, observed)
        if row.otherwise:
            _count(arm, row, _other(row.state), row.otherwise, observed, timed=False)
    observed.arms.extend(groups.values())
    models = {row.model for row in rows if row.model}
    if len(models) == 1 and rows:
        observed.stack.set("model", models.pop(), text.cite(rows[0].index))


def _other(state: str) -> str:
    return "FAILED" if state == "COMPLETED" else "COMPLETED"


def _said_before(earlier: list[OutcomeRow], row: OutcomeRow) -> OutcomeRow | None:
    """The earlier row of the group whose k/n trials this row's complete (same n, the k
    adding up to it, the other way round), or None."""
    if row.trials_of is None:
        return None
    return next((e for e in earlier if e.trials_of == row.trials_of
                 and e.ended_so + row.ended_so == row.trials_of and e.state != row.state),
                None)


def _count(arm: Arm, row: OutcomeRow, state: str, trials: int, observed: Observed, *,
           timed: bool = True) -> None:
    """Add `trials` ended in `state` (a negative count takes back what an earlier row said
    of the same trials)."""
    arm.states[state] += trials
    if arm.states[state] <= 0:
        del arm.states[state]
    if state == "COMPLETED":
        arm.completed += trials
        return
    arm.failed += trials
    if trials < 0:
        del arm.failing_depths[trials:]
        return
    arm.failing_depths += [max(row.chunks)] * trials
    if timed and row.seconds is not None:
        ms = row.seconds * 1000.0
        timers = arm.timers or observed.timers
        kind = classify(ms, timers)
        if timers.driver.window is None and kind != AT_ONCE:
            kind = TIMER_UNKNOWN
        arm.ttf += [(ms, kind)] * trials
