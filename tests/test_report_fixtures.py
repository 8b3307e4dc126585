"""Reports written by earlier versions stay readable: the committed fixtures (one per report
kind, as version 0.1 wrote them) load, validate, render and compare with every later
harness. And what validates renders: random damage to a fixture either fails validation or
renders."""

from __future__ import annotations

import copy
import functools
import random
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harness.app.cli import main
from harness.report.fileformat import load_report

FIXTURES = Path(__file__).parent / "fixtures" / "reports"
KINDS = {"run": "SIMULATED", "reproduce": "SIMULATED", "bisect": "SIMULATED",
         "sweep": "SIMULATED", "serve-probe": "through a running flm serve"}


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("kind", list(KINDS))
def test_v1_reports_load_validate_and_render(kind):
    path = FIXTURES / f"v1-{kind}.yaml"
    report = load_report(path)
    assert report.schema == "xdna-runlist-harness/report/v1" and report.command == kind
    assert invoke("report", "check", str(path)).exit_code == 0
    for fmt in ("md", "text"):
        rendered = invoke("report", "render", str(path), "--format", fmt)
        assert rendered.exit_code == 0, rendered.output
        assert KINDS[kind] in rendered.output.splitlines()[0]
        assert report.verdict["text"].split(" [")[0][:60] in rendered.output


def test_v1_reports_compare():
    files = [str(FIXTURES / f"v1-{k}.yaml") for k in ("run", "reproduce", "sweep")]
    result = invoke("report", "compare", *files)
    assert result.exit_code == 0, result.output


# libyaml's writer where PyYAML has it: the same damaged document, written many times faster
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@functools.cache
def _fixture(kind: str):
    """A fixture's document, parsed once (each example damages its own deep copy)."""
    return yaml.safe_load((FIXTURES / f"v1-{kind}.yaml").read_text())


def _damage(data, rng: random.Random, depth: int = 0):
    """Replace one value somewhere in the document with a value of another type."""
    if isinstance(data, dict) and data and depth < 6:
        key = rng.choice(list(data))
        if rng.random() < 0.3:
            data[key] = rng.choice([None, 7, "text", [], {}, [1, "x"], {"k": 1}, True, 1.5])
        else:
            _damage(data[key], rng, depth + 1)
    elif isinstance(data, list) and data and depth < 6:
        index = rng.randrange(len(data))
        if rng.random() < 0.3:
            data[index] = rng.choice([None, 7, "text", [], {}, True])
        else:
            _damage(data[index], rng, depth + 1)
    return data


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.sampled_from(list(KINDS)), st.integers(0, 2**32))
@example("run", 1088006)            # a plan named by a mapping: read before it is checked
def test_what_validates_renders(tmp_path, kind, seed):
    data = copy.deepcopy(_fixture(kind))
    damaged = tmp_path / f"damaged-{seed}.yaml"
    damaged.write_text(yaml.dump(_damage(data, random.Random(seed)), Dumper=_DUMPER))
    valid = invoke("report", "check", str(damaged)).exit_code == 0
    for fmt in ("md", "text"):
        rendered = invoke("report", "render", str(damaged), "--format", fmt)
        assert rendered.exit_code == (0 if valid else 2), rendered.output
        assert isinstance(rendered.exception, (SystemExit, type(None))), rendered.exception
