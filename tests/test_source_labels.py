"""Every source label a report shows (SIMULATED / EMULATED, with the profile or not) is
chosen by one function, `harness.report.model.source_tag` (`source_label` adds the
profile): no other code under harness/report spells the words, so a model's results can
never carry the wrong one or drop it. The marks on a simulated driver's own log lines
(`harness.logs.kernel_log.mark_simulated`: the driver is the harness's model under
emulation too) and the heading over the stand-in flm serve's answers (only the simulated
stack has one: harness.sim.stand_in_server) are the other uses, named here one by one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from click.testing import CliRunner

from harness.app.cli import main
from harness.report.fileformat import load_report
from harness.report.model import source_label, source_tag
from harness.report.provenance import modelled_table
from harness.report.render import title

REPORT = Path(__file__).parent.parent / "harness" / "report"
WORD = re.compile(r"\b(SIMULATED|EMULATED)\b")
# the simulated driver's log lines, marked as the lines are (not a label of the results)
LOG_MARKS = [
    ("render.py", " (SIMULATED: as the simulated driver and XRT wrote it)"),
    ("render.py", " (SIMULATED)"),        # the driver events read from its lines
    ("render.py", ", SIMULATED: printed by the simulated driver standing in"),
    ("digest.py", "# SIMULATED: every line below was printed by the harness's simulated "
                  "driver, not by a machine"),
    ("bundle.py", " (simulated lines, each marked SIMULATED)"),
    # the stand-in server's answers (not a label of the results)
    ("render.py", " (SIMULATED: the simulated stack's stand-in for flm serve, not a real "
                  "server)"),
]


def _spelled() -> list[tuple[str, str]]:
    found = []
    for path in sorted(REPORT.rglob("*.py")):
        if path.name == "model.py" and path.parent == REPORT:
            continue
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef,
                                           ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in docstrings and WORD.search(node.value):
                found.append((path.name, node.value))
    return found


def test_no_report_code_spells_a_source_label_but_the_one_function():
    assert sorted(_spelled()) == sorted(LOG_MARKS)


def test_each_output_takes_the_label_from_the_one_function():
    emulated = {"kind": "xrt", "emulated": {"profile": "mainline", "xrt_version": "2.21"},
                "profile": "mainline"}
    stand_in = {"kind": "xrt", "stand_in": True, "stand_in_profile": "staging"}
    simulated = {"kind": "sim", "profile": "mainline,inflight-cap:40"}
    for backend, word in ((emulated, "EMULATED"), (stand_in, "SIMULATED"),
                          (simulated, "SIMULATED")):
        assert source_tag(backend) == word and source_label(backend).startswith(word)
        assert f": {word} " in title({"case": {"name": "c"}, "backend": backend})
        assert modelled_table(backend).title.startswith(f"The stack that answered: {word} (")


def test_a_simulated_render_and_diagnosis_carry_the_label(tmp_path):
    out = tmp_path / "r.yaml"
    cli = CliRunner()
    ran = cli.invoke(main, ["run", "nop-depth", "--plan", "halves", "--trials", "1",
                            "--no-isolate", "--out", str(out)])
    assert ran.exit_code in (0, 1), ran.output
    assert source_tag(load_report(out).backend) == "SIMULATED"
    rendered = cli.invoke(main, ["report", "render", str(out)])
    assert "**SIMULATED.**" in rendered.output and ": SIMULATED stack" in rendered.output
