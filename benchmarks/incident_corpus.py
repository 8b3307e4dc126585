"""How `diagnose` answers the public incidents of tests/incidents/: evidence the project did
not produce, each incident's cause established by a maintainer or a merged fix.

For every incident its artefacts are copied under neutral names (nothing is told by a name)
and diagnosed together, and the answer is held to the incident's `expect`: the right cause
first; `undetermined` with the right next experiment (every substring `expect.experiment`
names) where the artefacts cannot decide; confidently wrong where a cause is named first that
is not the expected one (a cause named where `undetermined` is expected included); missed
otherwise (undetermined where a cause was expected, or without the deciding experiment,
or nothing-fails). The baseline, in the same run, is the same corpus with the files' own
names (dmesg.txt, error.json): a diagnosis that reads content alone answers the same.
This is a count over a fixed corpus, not a timing: there are no rounds to spread.

Printed: a row per incident, then "N of M incidents: right cause first, K undetermined with
the right next experiment, W confidently wrong" (target: every incident right or honestly
undetermined, 0 confidently wrong). `corpus_figures()` returns the same figures for other
benchmarks to print (benchmarks/diagnose_accuracy.py beside its scenario families).

Usage: python benchmarks/incident_corpus.py [--corpus DIR] [--quick]
(--quick: the same, the corpus being small)
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness.report.diagnosis import UNDETERMINED, Diagnosis, diagnose

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "incidents"
RIGHT, HONEST, WRONG, MISSED = "right", "undetermined, right experiment", "WRONG", "missed"


@dataclass(frozen=True)
class Graded:
    """One incident's answer against what its thread established."""

    id: str
    expected: str
    answered: str
    grade: str
    experiment: str


@dataclass
class CorpusFigures:
    """The corpus's figures: incidents, the right cause first, undetermined with the right
    experiment, confidently wrong, missed; and each incident's row."""

    incidents: int = 0
    right: int = 0
    undetermined: int = 0
    wrong: int = 0
    missed: int = 0
    rows: list[Graded] = field(default_factory=list)

    def line(self) -> str:
        return (f"{self.right} of {self.incidents} incidents: right cause first, "
                f"{self.undetermined} undetermined with the right next experiment, "
                f"{self.wrong} confidently wrong")


def incidents(corpus: Path = CORPUS) -> list[tuple[Path, dict]]:
    folders = sorted(p for p in corpus.iterdir() if (p / "incident.yaml").is_file())
    return [(folder, yaml.safe_load((folder / "incident.yaml").read_text("utf-8")))
            for folder in folders]


def grade(incident: dict, diagnosis: Diagnosis) -> Graded:
    expect = incident["expect"]
    top = diagnosis.top
    wanted = expect["first"]
    if top.id == wanted and wanted != UNDETERMINED:
        verdict = RIGHT
    elif top.id == UNDETERMINED == wanted:
        verdict = HONEST if all(part in top.experiment for part in
                                expect.get("experiment") or []) else MISSED
    elif diagnosis.determined:
        verdict = WRONG
    else:
        verdict = MISSED
    return Graded(incident["id"], wanted, top.id, verdict, top.experiment)


def diagnosed(folder: Path, incident: dict, into: Path | None) -> Diagnosis:
    """The incident's artefacts diagnosed together: copied under neutral names into
    `into`, or (None) read where they are, under their own names."""
    paths = [folder / a["file"] for a in incident["artefacts"]]
    if into is not None:
        into.mkdir(parents=True, exist_ok=True)
        copies = [into / f"a{number:02d}" for number in range(1, len(paths) + 1)]
        for path, copy in zip(paths, copies, strict=True):
            shutil.copyfile(path, copy)
        paths = copies
    return diagnose(paths)


def corpus_figures(corpus: Path = CORPUS, *, neutral: bool = True) -> CorpusFigures:
    """Every incident of `corpus` diagnosed and graded (`neutral`: under neutral names)."""
    figures = CorpusFigures()
    with tempfile.TemporaryDirectory(prefix="incidents-") as scratch:
        for folder, incident in incidents(corpus):
            into = Path(scratch) / folder.name if neutral else None
            row = grade(incident, diagnosed(folder, incident, into))
            figures.rows.append(row)
            figures.incidents += 1
            figures.right += row.grade == RIGHT
            figures.undetermined += row.grade == HONEST
            figures.wrong += row.grade == WRONG
            figures.missed += row.grade == MISSED
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--quick", action="store_true", help="the same (the corpus is small)")
    args = parser.parse_args()
    figures = corpus_figures(args.corpus)
    named = corpus_figures(args.corpus, neutral=False)
    width = max(len(row.id) for row in figures.rows)
    print(f"{'incident':<{width}}  {'expected':<18} {'answered':<18} grade")
    for row in figures.rows:
        print(f"{row.id:<{width}}  {row.expected:<18} {row.answered:<18} {row.grade}")
    same = sum(a.answered == b.answered for a, b in zip(figures.rows, named.rows, strict=True))
    print(f"baseline, the files under their own names: {named.line()}; the same answer for "
          f"{same} of {figures.incidents}")
    if figures.missed:
        print(f"missed: {figures.missed} (undetermined where a cause was established, or "
              "without the deciding experiment)")
    print(figures.line() + " (target: every incident right or honestly undetermined, "
          "0 confidently wrong)")


if __name__ == "__main__":
    main()
