"""The isolation path as real subprocesses: workers, deadlines, crashes, kill -9, Ctrl-C."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.execution.isolation import WORKER_START_ENV, run_isolated, shutdown
from harness.execution.worker import SPARES
from harness.model.results import CommandSpec, TrialSpec, TrialStatus
from harness.report.fileformat import load_report

CASES = Path(__file__).resolve().parent.parent / "cases"

HARNESS = [sys.executable, "-m", "harness"]
STARTS = ["fork-server", "spawn"]


@pytest.fixture(params=STARTS)
def worker_start(request, monkeypatch) -> str:
    """Each guarantee holds for both ways a worker starts."""
    monkeypatch.setenv(WORKER_START_ENV, request.param)
    return request.param


def harness(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*HARNESS, *args], capture_output=True, text=True, timeout=timeout)


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([*HARNESS, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def trial_workers(seen: dict[int, str]) -> set[int]:
    """The processes that ran trials, not the fork server that started them (its children
    are forks of it, so they share its command line but not its parent)."""
    return {pid for pid, seen_as in seen.items()
            if "--serve" not in seen_as or not seen_as.startswith("child of the harness")}


def wait_for_in_flight(path: Path, proc: subprocess.Popen) -> None:
    for _ in range(300):
        if path.exists() and '"status": "in-flight"' in path.read_text():
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("no trial went in-flight")


def wait_for_children(proc: subprocess.Popen) -> set[int]:
    for _ in range(200):
        found = descendants(proc)
        if trial_workers(found):
            return set(found)
        time.sleep(0.05)
    raise AssertionError("the harness started no worker")


def descendants(proc: subprocess.Popen) -> dict[int, str]:
    """pid: whose child and which command line, for each process under `proc` now."""
    found = {}
    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return found
    for child in children:
        try:
            parent = "child of the harness" if child.ppid() == proc.pid else "grandchild"
            found[child.pid] = f"{parent}: {' '.join(child.cmdline())}"
        except psutil.Error:
            found[child.pid] = "gone"
    return found


def run_watching(*args: str, timeout: float = 120) -> tuple[int, str, str, dict[int, str]]:
    """Run the harness; return its status, output and every process it started (its own
    children only: other runs on this machine are none of this test's business)."""
    proc = start(*args)
    seen: dict[int, str] = {}
    ended = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < ended:
        for pid, seen_as in descendants(proc).items():
            # The latest command line a live process showed wins: just after fork, before
            # exec, a child still shows its parent's command line.
            if seen_as != "gone" and seen_as.split(": ", 1)[-1] or pid not in seen:
                seen[pid] = seen_as
        time.sleep(0.02)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err, seen


def alive(pids: set[int], wait_s: float = 5.0) -> set[int]:
    """Which of these processes still run after up to `wait_s`."""
    deadline = time.monotonic() + wait_s
    while True:
        left = set()
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    left.add(pid)
            except psutil.NoSuchProcess:
                pass
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def test_new_user_reproduce_prints_a_verdict():
    script = shutil.which("reproduce_ert_timeout")
    command = [script] if script else [*HARNESS, "reproduce"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0].startswith("backend: SIMULATED stack")
    assert out[1] == ("verdict: 42 in one runlist: COMPLETED 3/3; cut 21+21: COMPLETED 3/3 "
                      "-> not reproduced [SIMULATED]")
    assert out[-1].startswith("diagnose: runlist-harness diagnose ")
    report = load_report(out[-2].split("report: ", 1)[1])
    assert report.backend["isolation"] is True
    assert all(t.status is TrialStatus.COMPLETED for p in report.plans for t in p.trials)


def with_deadline(folder: Path, name: str, deadline_s: float) -> Path:
    """A shipped case with a deadline of its own, shorter than the simulated driver's timer:
    the one way to cut a simulated hang off (--deadline refuses it, see below)."""
    case = folder / f"{name}.yaml"
    case.write_text((CASES / f"{name}.yaml").read_text() + f"deadline_s: {deadline_s}\n")
    return case


def test_deadline_kills_the_worker_and_the_next_trial_still_runs(tmp_path, worker_start):
    out = tmp_path / "deadline.yaml"
    case = with_deadline(tmp_path, "minicpm5-2b-decode", 1.5)
    code, _, err, workers = run_watching("run", str(case), "--plan", "monolithic",
                                         "--trials", "2", "--profile", "mainline,hang-at:3",
                                         "--realtime", "--out", str(out))
    assert code == 4, err
    trials = load_report(out).plans[0].trials
    assert [t.status for t in trials] == ["deadline", "deadline"]
    assert "1.5 s deadline" in trials[0].error and trials[0].deadline_s == 1.5
    # a worker per trial; a fork server also keeps spares forked ahead, which leave unused
    spares = SPARES if worker_start == "fork-server" else 0
    assert 2 <= len(trial_workers(workers)) <= 2 + spares and not alive(set(workers))
    assert load_report(out).settings["worker_start"] == worker_start


def test_a_worker_that_dies_is_recorded_as_crashed(tmp_path, worker_start):
    from harness.formats.xclbin_writer import flm_spec, synthesize
    xclbin = tmp_path / "layer.xclbin"
    xclbin.write_bytes(synthesize(flm_spec("Crash/layer")))
    spec = TrialSpec(plan="p", chunks=[2], trial=0, seed=1, xclbins={"layer": str(xclbin)},
                     runlist_context="layer",
                     per_layer=[CommandSpec("MLIR_AIE", str(tmp_path / "gone.bin"), [64])])
    try:
        result = run_isolated(spec, {"kind": "sim", "profile": "staging"}, 30.0, {})
    finally:
        shutdown()
    assert result.status == "crashed"
    assert "exited with status 1" in result.error and "FileNotFoundError" in result.error


def test_kill_9_leaves_a_loadable_report_and_resume_finishes_it(tmp_path, worker_start):
    out = tmp_path / "killed.yaml"
    proc = start("run", "minicpm5-2b-decode", "--plan", "monolithic", "--trials", "1",
                 "--profile", "staging,hang-at:3", "--realtime", "--out", str(out))
    wait_for_in_flight(out, proc)
    workers = wait_for_children(proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    report = load_report(out)
    assert [t.status for t in report.plans[0].trials] == ["in-flight"]
    assert report.finished is None
    assert not alive(workers)             # the worker died with its parent
    done = harness("run", "--resume", str(out))
    assert done.returncode == 1, done.stderr
    banner, resuming, verdict, made = done.stdout.splitlines()[:4]
    assert banner.startswith("backend: SIMULATED stack, profile staging,hang-at:3,realtime "
                             "(hypothesis hang-at:3;")        # as the run began
    assert resuming == f"resuming {out}"
    assert verdict == "verdict: 42 in one runlist: TIMEOUT 1/1 -> no cut was run [SIMULATED]"
    assert made.startswith("  - SIMULATED: the outcome follows from the injected "
                           "hypothesis by construction: hang-at:3 makes every runlist "
                           "deeper than 3 fail")
    report = load_report(out)
    # the trial the kill interrupted is run again in its place: no trial past --trials 1
    assert [t.status for t in report.plans[0].trials] == ["failed"]
    assert report.finished is not None and report.verdict["reproduced"] is True


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_stops_cleanly_and_keeps_the_report(tmp_path, worker_start, signum, code):
    """Mid-trial (mainline's 60 s timer in real time, spares forked ahead), a
    stop ends the run at once: the trial's worker and the fork server's spares are killed,
    not waited for (well under the 0.5 s target here: benchmarks/stop_latency.py)."""
    out = tmp_path / "interrupted.yaml"
    proc = start("run", "minicpm5-2b-decode", "--trials", "2", "--profile",
                 "mainline,hang-at:3", "--realtime", "--out", str(out))
    wait_for_in_flight(out, proc)
    workers = wait_for_children(proc)
    sent = time.monotonic()
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    took = time.monotonic() - sent
    assert proc.returncode == code
    assert err.strip().endswith(f"continue with `runlist-harness run --resume {out}`")
    assert took < 2.0, f"{took:.2f} s from the signal to the exit"
    trials = load_report(out).plans[0].trials
    assert [t.status for t in trials] == ["interrupted"]
    assert not alive(workers)


def test_a_fork_server_that_died_between_trials_is_replaced(tmp_path, monkeypatch):
    from harness.execution import isolation
    from harness.formats.xclbin_writer import flm_spec, synthesize
    monkeypatch.setenv(WORKER_START_ENV, "fork-server")
    xclbin = tmp_path / "layer.xclbin"
    xclbin.write_bytes(synthesize(flm_spec("Replace/layer")))
    instr = tmp_path / "instr.bin"
    instr.write_bytes(b"\0" * 64)
    spec = TrialSpec(plan="p", chunks=[2], trial=0, seed=1, xclbins={"layer": str(xclbin)},
                     runlist_context="layer",
                     per_layer=[CommandSpec("MLIR_AIE", str(instr), [64])])
    backend = {"kind": "sim", "profile": "staging"}
    try:
        first = run_isolated(spec, backend, 30.0, {})
        server = isolation._SERVERS[("sim", "staging")].proc
        server.kill()
        server.wait()
        second = run_isolated(spec, backend, 30.0, {})
        replacement = isolation._SERVERS[("sim", "staging")].proc
    finally:
        shutdown()
    assert first.status == second.status and first.status != "crashed", second.error
    assert replacement.pid != server.pid


def test_each_trial_has_a_fresh_worker_whose_answer_is_the_in_process_one(tmp_path,
                                                                          worker_start):
    """Workers forked ahead (and, on the simulated stack, copying the pages the trials
    before theirs came to own) still run one trial each, and answer what the trial
    answers in-process."""
    runs = {}
    for mode, extra in (("isolated", []), ("in-process", ["--no-isolate"])):
        out = tmp_path / f"{mode}.yaml"
        done = harness("run", "minicpm5-2b-decode", "--plan", "42", "--plan", "21+21",
                       "--trials", "3", "--profile", "inflight-cap:40,flaky:0.3", "--out",
                       str(out), *extra)
        assert done.returncode in (0, 1), done.stderr
        runs[mode] = load_report(out)
    isolated = [t for p in runs["isolated"].plans for t in p.trials]
    assert len({t.worker["pid"] for t in isolated}) == len(isolated) == 6
    assert {t.worker["start"] for t in isolated} == {worker_start}
    for mine, theirs in zip(isolated, [t for p in runs["in-process"].plans for t in p.trials],
                            strict=True):
        assert (mine.status, mine.state, mine.seed) == (theirs.status, theirs.state,
                                                        theirs.seed)
        assert [(r.state, r.chains, r.failing_run) for r in mine.runlists] == \
            [(r.state, r.chains, r.failing_run) for r in theirs.runlists]


# -- a fork server's trials: each run once, none ahead of its order ---------------------------

SERVE_COUNTING = """
import json, os, sys
from harness.execution import session, worker
real = session.run_trial
def counted(spec, backend):
    with open(os.environ["RUNS_LOG"], "a") as log:
        log.write(f"{os.getpid()} {spec.trial}\\n")
    return real(spec, backend)
session.run_trial = counted
sys.exit(worker.serve("sim", "staging", os.environ["PAGES_FILE"]))
"""


def test_a_fork_server_runs_each_trial_once_and_nothing_ahead_of_it(tmp_path):
    # Spares are forked ahead and copy the pages their predecessors owned; none runs a
    # trial (or a rehearsal of one) before its order, and each order runs exactly once.
    from harness.execution.runner import RunOptions, trial_spec
    from harness.sources.load import load_case
    from harness.sources.packs import resolve_pack
    case = load_case("minicpm5-2b-decode")
    pack = resolve_pack(case, simulated=True)
    orders = "".join(json.dumps({"request": {"spec": trial_spec(
        case, pack, "42", [42], index, RunOptions(trials=1)).to_json(), "latencies": {}}})
        + "\n" for index in range(20))
    log = tmp_path / "runs.log"
    done = subprocess.run([sys.executable, "-c", SERVE_COUNTING], input=orders, text=True,
                          capture_output=True, timeout=120,
                          env={**os.environ, "RUNS_LOG": str(log),
                               "PAGES_FILE": str(tmp_path / "pages")})
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    answers = [r for r in replies if "status" in r]
    assert [r["status"] for r in answers] == [0] * 20
    assert [r["result"]["index"] for r in answers] == list(range(20))
    runs = [line.split() for line in log.read_text().splitlines()]
    assert sorted(int(trial) for _, trial in runs) == list(range(20))     # each once
    assert len({pid for pid, _ in runs}) == 20                            # each its own child
    assert (tmp_path / "pages").stat().st_size > 0      # a child said which pages it owned


SERVE_MARKING = """
import atexit, os, sys
from pathlib import Path
from harness.execution import session, worker
real = session.run_trial
def marked(spec, backend):
    atexit.register(lambda: Path(os.environ["MARKS"], str(os.getpid())).write_text("exit"))
    return real(spec, backend)
session.run_trial = marked
sys.exit(worker.serve("sim", "staging"))
"""


def test_a_simulated_child_that_records_no_capture_ends_without_the_interpreter_s_exit(
        tmp_path):
    # tearing the interpreter down touches every object the server made (each page copied
    # once more): a child whose exit has nothing to do for a capture ends at once
    from harness.execution.runner import RunOptions, trial_spec
    from harness.sources.load import load_case
    from harness.sources.packs import resolve_pack
    case = load_case("minicpm5-2b-decode")
    pack = resolve_pack(case, simulated=True)
    orders = "".join(json.dumps({"request": {"spec": trial_spec(
        case, pack, "42", [42], index, RunOptions(trials=1)).to_json(), "latencies": {}}})
        + "\n" for index in range(3))
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("XRT_")}
    done = subprocess.run([sys.executable, "-c", SERVE_MARKING], input=orders, text=True,
                          capture_output=True, timeout=120, env={**env, "MARKS": str(marks)})
    assert done.returncode == 0, done.stderr
    assert [json.loads(line).get("status") for line in done.stdout.splitlines()
            if "status" in line] == [0, 0, 0]
    assert list(marks.iterdir()) == []             # no child ran its exit hooks
