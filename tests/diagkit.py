"""Reports for the diagnosis to read: made by the harness on the simulated stack (a run in
this process), or by hand in the shape a hardware run writes (kernel-log events, the
firmware's account, an xrt-smi control, a serve-probe), each passing `report check`."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from harness.app.cli import main
from harness.formats.txn import work_stream
from harness.formats.yamlio import dump_yaml, load_yaml_text
from harness.report.check import check_report_file
from harness.report.diagnosis import Diagnosis, diagnose
from harness.report.model import Report
from harness.report.verdict import report_verdict

FIXTURES = Path(__file__).with_name("fixtures") / "reports"


def invoke(*args: str):
    """The command line as a user types it, in this process."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def report_of(result) -> Path:
    """The report a run's output names."""
    line = [x for x in result.stdout.splitlines() if x.startswith("report: ")][-1]
    return Path(line.split("report: ", 1)[1])


def simulated(folder: Path, name: str, *args: str, command: str = "reproduce") -> Path:
    """A report the harness writes on the simulated stack, trials in this process."""
    out = folder / f"{name}.yaml"
    result = CliRunner().invoke(main, [command, *args, "--no-isolate", "--backend", "sim",
                                       "--out", str(out)], catch_exceptions=False)
    assert out.is_file(), result.output
    return out


def work_case(folder: Path, layers: int = 42) -> Path:
    """A case like the shipped MiniCPM5 one whose runs carry work: an instruction stream of
    its own (not the one-NOOP stream), so a plan of it is the engine's work to the
    diagnosis, beside the depth-only control's NOOPs."""
    stream = folder / "work.bin"
    stream.write_bytes(work_stream(8))
    case = folder / "work-decode.yaml"
    case.write_text(
        "case: work-decode\n"
        "description: the MiniCPM5 runlist shape with runs that carry work\n"
        "source: tests\npack: MiniCPM5-2B-NPU2\nflow: elf\n"
        "xclbins: {attn: attn.xclbin, mm: mm.xclbin, layer: layer.xclbin, "
        "dequant: dequant.xclbin}\n"
        f"decode:\n  layers: {layers}\n  runlist_context: layer\n  per_layer:\n"
        "    - kernel: MLIR_AIE\n      instructions: work.bin\n"
        "      buffers: [4096, 4096, 4096, 4096, 4096]\n"
        'plans:\n  monolithic: "42"\n  halves: "21+21"\ntrials: 3\n', encoding="utf-8")
    return case


def of(*paths: Path) -> Diagnosis:
    return diagnose([str(p) for p in paths])


# -- hardware-shaped reports, by hand ---------------------------------------------------------

def failed_trial(index: int, runs: int, chains: list[int], state: str, *, wall_ms: float,
                 failing_chain: int = 0, failing_run: int | None = None,
                 named: bool = False, events: list[dict[str, Any]] | None = None,
                 health: dict[str, Any] | None = None) -> dict[str, Any]:
    codes = {"TIMEOUT": 8, "ERROR": 5, "ABORT": 6, "NEW": 1}
    runlist: dict[str, Any] = {
        "index": 0, "runs": runs, "chains": chains, "state": state,
        "state_code": codes[state],
        "failing_run": failing_chain * 24 if failing_run is None else failing_run,
        "failing_chain": failing_chain, "source": "device", "wall_ms": wall_ms,
        "message": f"runlist failed execution (ERT_CMD_STATE_{state})",
        "message_form": "state in message", "failing_run_named": named,
        "located_by": "the first member run neither NEW nor COMPLETED"}
    if health:
        runlist["health"] = health
    trial: dict[str, Any] = {"index": index, "status": "failed", "wall_ms": wall_ms + 40.0,
                             "seed": index, "state": state, "runlists": [runlist]}
    if events is not None:
        trial["kernel_log"] = {"source": "/dev/kmsg", "lines": [], "events": events}
    return trial


def completed_trial(index: int, runlists: list[int], *, ms_per_run: float) -> dict[str, Any]:
    return {"index": index, "status": "completed", "wall_ms": 50.0, "seed": index,
            "state": "COMPLETED",
            "runlists": [{"index": i, "runs": runs, "chains": _chains(runs),
                          "state": "COMPLETED", "state_code": 4,
                          "wall_ms": round(runs * ms_per_run, 3)}
                         for i, runs in enumerate(runlists)]}


def setup_refused(index: int, error: str) -> dict[str, Any]:
    return {"index": index, "status": "failed", "wall_ms": 12.0, "seed": index,
            "state": "failed", "error": f"set-up failed: {error}", "runlists": []}


def _chains(runs: int) -> list[int]:
    return [24] * (runs // 24) + ([runs % 24] if runs % 24 else [])


def plan(name: str, spec: str, chunks: list[int], trials: list[dict[str, Any]], *,
         control: bool = False) -> dict[str, Any]:
    by_state: dict[str, int] = {}
    by_status: dict[str, int] = {}
    for trial in trials:
        by_state[trial["state"]] = by_state.get(trial["state"], 0) + 1
        by_status[trial["status"]] = by_status.get(trial["status"], 0) + 1
    out: dict[str, Any] = {"name": name, "spec": spec, "chunks": chunks, "expect": None,
                           "summary": {"trials": len(trials), "by_state": by_state,
                                       "by_status": by_status}, "trials": trials}
    if control:
        out["control"] = "depth-only control: NOP runs on XRT's validate.xclbin"
    return out


def hardware_report(folder: Path, name: str, plans: list[dict[str, Any]], *,
                    flavour: str = "mainline", kernel: str = "7.0.0-1-generic",
                    timeout_setting: str | None = None, nop_only: bool = True,
                    case_kind: str = "case", sections: dict[str, Any] | None = None) -> Path:
    """A report as a hardware run writes it (schema v1, one nested document), from the
    shipped v1 fixture with its machine, driver, plans and sections replaced."""
    doc = copy.deepcopy(load_yaml_text((FIXTURES / "v1-run.yaml").read_text()))
    doc["backend"] = {"kind": "xrt", "simulated": False, "isolation": True,
                      "pyxrt": "/opt/xilinx/xrt/python/pyxrt.so",
                      "xrt": {"release": "2.21.75", "message_form": "state in message",
                              "source": "BUILD_VERSION of the XRT install pyxrt came from"}}
    doc["environment"]["system"]["kernel"] = kernel
    doc["environment"]["driver"] = {"loaded": True, "module": "amdxdna", "flavour": flavour,
                                    "timeout_setting": timeout_setting,
                                    "timeout_rule": "as the flavour's row says"}
    doc["settings"]["isolate"] = True
    doc["settings"]["trials"] = max([len(p["trials"]) for p in plans] or [1])
    doc["case"]["kind"] = case_kind
    doc["case"]["workload"] = {"control_code": "the one-NOOP TXN stream" if nop_only else
                               "the captured application's own commands",
                               "buffers": "five 4 KiB buffers", "nop_only": nop_only}
    doc["plans"] = plans
    doc.pop("timers", None)
    doc.update(sections or {})
    doc["verdict"] = None
    doc["verdict"] = report_verdict(Report.from_dict(doc)).to_dict()
    path = folder / f"{name}.yaml"
    path.write_text("# xdna-runlist-harness report\n" + dump_yaml(doc), encoding="utf-8")
    problems = check_report_file(str(path)).problems
    assert problems == [], problems
    return path


def serve_report(folder: Path, name: str, outcomes: list[tuple[str, str | None]]) -> Path:
    """A serve-probe report whose requests ended so: (outcome, XRT state or None)."""
    doc = copy.deepcopy(load_yaml_text((FIXTURES / "v1-serve-probe.yaml").read_text()))
    doc["server"]["requests"] = [
        {"index": i, "model": "minicpm5:2b", "outcome": outcome, "wall_ms": 30000.0,
         **({"state": state, "error": f"runlist failed execution (ERT_CMD_STATE_{state})"}
            if state else {"error": "the server dropped the connection"})}
        for i, (outcome, state) in enumerate(outcomes)]
    path = folder / f"{name}.yaml"
    path.write_text(dump_yaml(doc), encoding="utf-8")
    problems = check_report_file(str(path)).problems
    assert problems == [], problems
    return path
