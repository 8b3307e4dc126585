"""Where `reproduce_ert_timeout --no-isolate` spends its time, against a bare interpreter.

Each figure is the best of N fresh processes in this run, alternating with a bare
interpreter (`python -c pass`, the baseline) so that both see the same load:
- the imports of the command's own modules (what `import harness.app.cli.run_cmd` loads);
- the run: the trials, the report and the recipes beside it, with what the run imports
  as it goes (the simulator, on the simulated stack);
- over the whole process, the time spent making dataclasses (CPython compiles every
  method a dataclass generates) and compiling regular expressions, counted by wrapping
  the standard library's own functions for them, and in cyclic garbage collections
  (`gc.callbacks`).
The total is the command as `reproduce_wall.py` times it, whose target is under 5x the
bare interpreter.

Usage: python benchmarks/start_up.py [--repeat N] [--quick]   (--quick: 2 processes, to
check that it runs)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="processes per figure")
    parser.add_argument("--quick", action="store_true", help="2 processes: check that it runs")
    args = parser.parse_args()
    repeat = 2 if args.quick else args.repeat
    extra = ["--trials", "1", "--no-control"] if args.quick else []
    best: dict[str, float] = {}
    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(repeat):
            best["bare"] = min(best.get("bare", float("inf")), bare(folder))
            figures = child(folder, extra)
            for name in ("imports", "run", "dataclasses", "regex", "gc"):
                best[name] = min(best.get(name, float("inf")), figures[name])
            counts = {name: figures[name] for name in ("made", "compiled", "collections")}
    base = best["bare"]
    print(f"reproduce_ert_timeout --no-isolate on the simulated stack, best of {repeat} "
          "processes each, this run" + (" (quick: one trial per plan, no control)"
                                        if args.quick else "") + ":")
    print(f"  bare interpreter (python -c pass)   {base:6.3f} s")
    print(f"  imports of the command's modules   {best['imports']:6.3f} s   "
          f"({best['imports'] / base:.1f}x the interpreter)")
    print(f"  the run (and what it imports)      {best['run']:6.3f} s   "
          f"({best['run'] / base:.1f}x the interpreter)")
    print(f"  of both: making {counts['made']} dataclasses {best['dataclasses']:6.3f} s, "
          f"compiling {counts['compiled']} regular expressions {best['regex']:6.3f} s, "
          f"{counts['collections']} garbage collections {best['gc']:6.3f} s")


if __name__ == "__main__":
    main()
