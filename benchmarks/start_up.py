"""Start-up against a bare interpreter, with and without the package's bytecode, and where
`reproduce_ert_timeout --no-isolate` spends its time.

First, three commands as fresh processes, each round alternating with a bare interpreter
(`python -c pass`, the baseline), each ratio taken against the same round's: the
`reproduce_ert_timeout --help` and `runlist-harness --help` a new user types first, and a
one-trial run (`run minicpm5-2b-decode --plan 42 --trials 1 --no-isolate`). Each runs
from a copy of the package in a temporary folder with PYTHONDONTWRITEBYTECODE=1 (as some
machines set it, this one included), twice: compiled in place as an install leaves it
(`pip install .`, and `pip install -e .` through harness/app/install.py), and as sources
alone, compiled again at every start (a checkout never installed, or edited since).
Target: each under 5x the bare interpreter, with the bytecode.

Then the breakdown, min / median / max over N fresh processes alternating with a bare
interpreter:
- the imports of the command's own modules (what `import harness.app.cli.run_cmd` loads);
- the run: the trials, the report and the recipes beside it, with what the run imports
  as it goes (the simulator, on the simulated stack);
- over the whole process, the time spent making dataclasses (CPython compiles every
  method a dataclass generates) and compiling regular expressions, counted by wrapping
  the standard library's own functions for them, and in cyclic garbage collections
  (`gc.callbacks`).
The imports and the run together are the command as `reproduce_wall.py` times it (less
the interpreter's own start), whose target is under 5x the bare interpreter.

Usage: python benchmarks/start_up.py [--repeat N] [--quick]   (--quick: 3 processes, to
check that it runs)
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import MIN_ROUNDS, alternate, ratios, spread

# The child: wraps dataclasses' class processing and re's compile (private functions of
# the standard library, read here only to count where time goes), then times the
# command's imports and its run.
CHILD = r"""
import time
started = time.perf_counter()           # dataclasses and re are on the path: counted
import contextlib, dataclasses, gc, io, json, re, sys
spent = {"dataclasses": 0.0, "made": 0, "regex": 0.0, "compiled": 0, "gc": 0.0,
         "collections": 0}
process_class, compile_ = dataclasses._process_class, re._compile

def timed_process_class(*args, **kwargs):
    started = time.perf_counter()
    try:
        return process_class(*args, **kwargs)
    finally:
        spent["dataclasses"] += time.perf_counter() - started
        spent["made"] += 1

def timed_compile(pattern, flags):
    if (type(pattern), pattern, flags) in re._cache:
        return compile_(pattern, flags)
    started = time.perf_counter()
    try:
        return compile_(pattern, flags)
    finally:
        spent["regex"] += time.perf_counter() - started
        spent["compiled"] += 1

begun = [0.0]

def timed_collection(phase, info):
    if phase == "start":
        begun[0] = time.perf_counter()
    else:
        spent["gc"] += time.perf_counter() - begun[0]
        spent["collections"] += 1

dataclasses._process_class, re._compile = timed_process_class, timed_compile
gc.callbacks.append(timed_collection)
from harness.app import entry
entry.load_command("reproduce")         # as the console script loads it
imported = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = entry._run(["--no-isolate", *json.loads(sys.argv[1])], "reproduce_ert_timeout",
                      "reproduce")
ran = time.perf_counter()
print(json.dumps({"code": code, "imports": imported - started, "run": ran - imported,
                  **spent}))
"""


def child(folder: str, extra: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(extra)], cwd=folder,
                          capture_output=True, text=True, check=True)
    figures = json.loads(done.stdout.splitlines()[-1])
    if figures["code"] != 0:
        raise SystemExit(f"reproduce --no-isolate ended {figures['code']}: {done.stderr}")
    return figures


def bare(folder: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], cwd=folder, check=True)
    return time.perf_counter() - started


PROJECT = Path(__file__).resolve().parents[1]
REPRODUCE_HELP = ["-c", "from harness.app.entry import reproduce; reproduce()", "--help"]
HELP = ["-m", "harness", "--help"]
ONE_TRIAL = ["-m", "harness", "run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1",
             "--no-isolate", "--out", "one.yaml", "--force"]
COMMANDS = {"reproduce_ert_timeout --help": REPRODUCE_HELP, "runlist-harness --help": HELP,
            "a one-trial run (--no-isolate)": ONE_TRIAL}


def package_copy(folder: Path, compiled: bool) -> dict[str, str]:
    """The package copied under `folder` (its cases where an install puts them), compiled
    in place or not; the environment that runs it from there and writes no bytecode."""
    shutil.copytree(PROJECT / "harness", folder / "harness",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(PROJECT / "cases", folder / "harness" / "cases")
    if compiled:
        compileall.compile_dir(str(folder / "harness"), quiet=2)
    env = {**os.environ, "PYTHONPATH": str(folder), "PYTHONDONTWRITEBYTECODE": "1",
           "XDG_CACHE_HOME": str(folder.parent / "cache")}
    env.pop("PYTHONPYCACHEPREFIX", None)
    return env


def timed(args: list[str], env: dict[str, str], folder: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=folder, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def start_up_figures(repeat: int) -> None:
    """Each command's start against a bare interpreter, with and without the bytecode."""
    with tempfile.TemporaryDirectory() as tmp:
        copies = {way: package_copy(Path(tmp) / way, way == "compiled")
                  for way in ("compiled", "sources")}
        run_in = Path(tmp)
        timed(ONE_TRIAL, copies["compiled"], run_in)        # the stand-in pack, made once
        sides = [lambda: timed(["-c", "pass"], copies["compiled"], run_in)]
        for way in copies:
            sides += [lambda args=args, way=way: timed(args, copies[way], run_in)
                      for args in COMMANDS.values()]
        figures = alternate(sides, repeat)
    bare, rest = figures[0], figures[1:]
    print(f"start-up, {len(bare)} alternating rounds, this run (min / median / max), each "
          "from a copy of the package, PYTHONDONTWRITEBYTECODE=1:")
    print(f"  bare interpreter (python -c pass)     {spread(bare, '.3f')} s")
    for index, way in enumerate(("with the bytecode an install leaves", "from sources alone, "
                                                                         "compiled at start")):
        print(f"  {way}:")
        for offset, name in enumerate(COMMANDS):
            seconds = rest[index * len(COMMANDS) + offset]
            target = "; target under 5x" if index == 0 else ""
            print(f"    {name:<33} {spread(seconds, '.3f')} s   "
                  f"({spread(ratios(seconds, bare), '.1f')}x the interpreter{target})")


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--repeat", type=int, default=15, help="processes per figure (>= 3)")
    parser.add_argument("--quick", action="store_true", help="3 processes: check that it runs")
    args = parser.parse_args()
    repeat = MIN_ROUNDS if args.quick else args.repeat
    extra = ["--trials", "1", "--no-control"] if args.quick else []
    start_up_figures(repeat)
    children: list[dict] = []

    def one_child() -> float:
        children.append(child(folder, extra))
        return 0.0
    with tempfile.TemporaryDirectory() as folder:
        bares, _ = alternate([lambda: bare(folder), one_child], repeat)
    figure = {name: [c[name] for c in children]
              for name in ("imports", "run", "dataclasses", "regex", "gc")}
    total = [c["imports"] + c["run"] for c in children]
    counts = {name: children[-1][name] for name in ("made", "compiled", "collections")}
    print(f"reproduce_ert_timeout --no-isolate on the simulated stack, {len(bares)} "
          "alternating processes each, this run (min / median / max)"
          + (" (quick: one trial per plan, no control)" if args.quick else "") + ":")
    print(f"  bare interpreter (python -c pass)  {spread(bares, '.3f')} s")
    print(f"  imports of the command's modules   {spread(figure['imports'], '.3f')} s   "
          f"({spread(ratios(figure['imports'], bares), '.1f')}x the interpreter)")
    print(f"  the run (and what it imports)      {spread(figure['run'], '.3f')} s   "
          f"({spread(ratios(figure['run'], bares), '.1f')}x the interpreter)")
    print(f"  both, past the interpreter's start {spread(total, '.3f')} s   "
          f"({spread(ratios([t + b for t, b in zip(total, bares, strict=True)], bares), '.1f')}"
          "x the interpreter with it; target under 5x)")
    print(f"  of both: making {counts['made']} dataclasses {spread(figure['dataclasses'], '.3f')}"
          f" s, compiling {counts['compiled']} regular expressions "
          f"{spread(figure['regex'], '.3f')} s, {counts['collections']} garbage collections "
          f"{spread(figure['gc'], '.3f')} s")


if __name__ == "__main__":
    main()
