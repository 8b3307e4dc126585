"""What bundling a big report costs, against rendering it.

A report of about `--size-mb` megabytes is written synthetically (much faster than
running it): a real simulated run of two plans, one failing with the firmware's timeout
capture in its kernel log, one completing as 42 runlists of one run each (a sweep's
shape: long lists of runlist outcomes), then its trials repeated with their own index,
seed, start time and kernel-log time stamps, so that no two trials hold the same strings
(what a redactor that remembers every string it saw pays for). Then, each in a
child process with its own peak memory (`benchmarks/peak.py`), in alternation, round
after round (min / median / max over the rounds, ratios taken round by round):
- `report render` of it (the baseline),
- `report bundle` of it, redacted as by default,
- `report bundle --no-redact`.

Target: the redacted bundle in under 3x the render's time and under 200 MiB.
With `--private`, every trial also names a machine's address (a worker's host), so that
no line can be copied as it is and each is redacted field by field (the worst case).

Usage: python benchmarks/bundle_scale.py [--size-mb N] [--rounds R] [--private] [--folder DIR]
[--quick]   (--quick: a 1 MB report, to check that it runs)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import tempfile
import time
from pathlib import Path

from figures import MIN_ROUNDS, alternate, ratios, spread
from peak import bare_peak, harness_run

from harness.formats.yamlio import dump_yaml, load_yaml_text
from harness.model.results import TrialStatus
from harness.report.model import JOURNAL, Report, brief_from_dict
from harness.report.verdict import judge

_STAMP = re.compile(r"\[ *(\d+)\.(\d+)\]")


def seed_report(folder: Path) -> Path:
    """A real simulated run: 42 fails with a timeout (kernel log and health kept), max:1
    completes as 42 runlists."""
    from harness.app.cli import main as cli
    out = folder / "seed.yaml"
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet), \
            contextlib.redirect_stderr(quiet):
        cli.main(["run", "minicpm5-2b-decode", "--plan", "42", "--plan", "max:1",
                  "--trials", "1", "--no-isolate", "--profile", "inflight-cap:40",
                  "--out", str(out)], standalone_mode=False)
    return out


def big_report(seed: Path, target: Path, size: int, private: bool = False) -> int:
    """Write `target` of about `size` bytes from `seed`'s trials; the number of trials.
    `private`: each trial names its worker's host by address."""
    text = seed.read_text()
    head, journal = text.split("\n" + JOURNAL + "\n", 1)
    header = load_yaml_text(head)
    finals: dict[str, dict] = {}
    for line in journal.splitlines():
        entry = json.loads(line[2:])
        if "trial" in entry and entry["trial"]["status"] not in ("in-flight",):
            finals[entry["trial"]["plan"]] = entry["trial"]
    lines = [json.dumps({"trial": body}, ensure_ascii=True, separators=(", ", ": "))
             for body in finals.values()]
    per_round = sum(len(line) + 3 for line in lines)
    rounds = max(1, size // per_round)
    header["settings"]["trials"] = rounds
    report = Report.from_dict(dict(header, plans=[
        dict(p, trials=[finals[p["name"]]] * rounds) for p in header["plans"]]))
    header["verdict"] = judge(report.plans, report.backend).to_dict()
    with target.open("w", encoding="ascii") as out:
        out.write("# xdna-runlist-harness report: SIMULATED stack, not hardware evidence\n")
        out.write(dump_yaml(header) + JOURNAL + "\n")
        for index in range(rounds):
            for body in finals.values():
                trial = dict(body, index=index, seed=(body["seed"] + index) % 2**32,
                             started=f"2026-12-01T{index // 3600 % 24:02d}:"
                                     f"{index // 60 % 60:02d}:{index % 60:02d}Z")
                if private:
                    trial["worker"] = {"host": f"10.1.{index // 250 % 250}.{index % 250 + 1}"}
                log = trial.get("kernel_log")
                if isinstance(log, dict) and log.get("lines"):
                    stamp = f"[{1000 + index * 3:>5}.{index % 999_983:06d}]"
                    trial["kernel_log"] = dict(log, lines=[_STAMP.sub(stamp, line, count=1)
                                                           for line in log["lines"]])
                out.write("- " + json.dumps({"trial": trial}, ensure_ascii=True,
                                            separators=(", ", ": ")) + "\n")
    assert all(t.status is not TrialStatus.IN_FLIGHT for p in report.plans for t in p.trials)
    assert brief_from_dict(next(iter(finals.values())))
    return rounds * len(finals)


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--size-mb", type=int, default=250,
                        help="the report's size in MB (default 250)")
    parser.add_argument("--rounds", type=int, default=MIN_ROUNDS, help="alternating rounds")
    parser.add_argument("--private", action="store_true",
                        help="every trial names an address: every line is redacted")
    parser.add_argument("--folder", default=None,
                        help="where to write the report and bundles (default: a temp folder)")
    parser.add_argument("--quick", action="store_true",
                        help="a 1 MB report: check that it runs")
    args = parser.parse_args()
    if args.quick:
        args.size_mb = 1
    with tempfile.TemporaryDirectory(dir=args.folder) as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        report = folder / "big.yaml"
        trials = big_report(seed_report(folder), report, args.size_mb * 1_000_000,
                            args.private)
        built = time.perf_counter() - started
        size = report.stat().st_size
        commands = {
            "report render": ["report", "render", str(report), "--out", str(folder / "big.md")],
            "report bundle": ["report", "bundle", str(report), "--out",
                              str(folder / "big.tar.gz")],
            "report bundle --no-redact": ["report", "bundle", "--no-redact", str(report),
                                          "--out", str(folder / "plain.tar.gz")]}
        peaks: dict[str, list[float]] = {}

        def timed(name: str) -> float:
            Path(commands[name][-1]).unlink(missing_ok=True)   # each round writes it anew
            seconds, peak, done = harness_run(commands[name])
            if done.returncode != 0:
                raise SystemExit(f"{name} failed: {done.stderr[-2000:]}")
            peaks.setdefault(name, []).append(peak / 2**20)
            return seconds
        times = dict(zip(commands, alternate([lambda name=name: timed(name)
                                               for name in commands], args.rounds),
                         strict=True))
        bundle_bytes = (folder / "big.tar.gz").stat().st_size if \
            (folder / "big.tar.gz").exists() else 0
    base = bare_peak() / 2**20
    print(f"a report of {size / 1e6:,.0f} MB, {trials:,} trials (written in {built:.0f} s)"
          + (", an address in every trial" if args.private else "")
          + f"; {len(times['report render'])} alternating rounds, this run (min / median / "
            "max):")
    print(f"  a bare interpreter peaks at {base:.0f} MiB")
    render = times["report render"]
    for name, seconds in times.items():
        ratio = "" if name == "report render" else \
            f", {spread(ratios(seconds, render))}x the render"
        target = " (target under 3x the render and 200 MiB)" if name == "report bundle" else ""
        print(f"  {name:<26} {spread(seconds, '.1f')} s{ratio}, peak "
              f"{spread(peaks[name], '.0f')} MiB{target}")
    print(f"  the redacted bundle: {bundle_bytes / 1e6:,.1f} MB")


if __name__ == "__main__":
    main()
