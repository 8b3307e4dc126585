"""What keeps a sweep's cost per runlist near a hand-written pyxrt loop's
(benchmarks/sweep_cost.py measures it): work asked once instead of per runlist, objects
freed by their reference counts instead of the cyclic collector, the binding's overload
tables made once. Each test counts what the change removed, never time."""

from __future__ import annotations

import gc
import weakref

import pytest

from harness.execution.backend import choose_backend
from harness.execution.runner import RunOptions, derive_deadline, trial_spec
from harness.execution.session import run_trial
from harness.model.plan import Plan
from harness.sim import control, pybind
from harness.sources.load import load_case
from harness.sources.packs import resolve_pack


def _spec(chunks: list[int]):
    case = load_case("minicpm5-2b-decode")
    return case, trial_spec(case, resolve_pack(case, simulated=True), "p", chunks, 0,
                            RunOptions(trials=1))


def test_a_deadline_asks_the_driver_s_timeout_once_per_plan_not_per_runlist():
    backend = choose_backend("sim", "staging")
    asked = []
    real = backend.driver_timeout_s

    class Counting(type(backend)):
        def driver_timeout_s(self) -> float:
            asked.append(1)
            return real()
    backend.__class__ = Counting
    case = load_case("minicpm5-2b-decode")
    deadline = derive_deadline(case, Plan("p", "max:1", (1,) * 1000), backend)
    assert len(asked) == 1
    assert deadline > 1000 * real()          # still a timeout per runlist in the sum


def test_a_finished_trial_s_simulated_npu_is_freed_without_the_cyclic_collector():
    # Its pending timer event used to hold a bound method of the stack: a cycle, so each
    # trial's stack and its last 4,096 jobs waited for a collection.
    backend = choose_backend("sim", "staging")
    _, spec = _spec([1, 2, 3])
    enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        result = run_trial(spec, backend)
        assert result.state == "COMPLETED"
        finished = weakref.ref(control.current())
        assert finished().contexts == [] and finished()._events      # a timer still pending
        backend.prepare_trial(spec.seed + 1)                         # the next trial's NPU
        assert finished() is None
    finally:
        if enabled:
            gc.enable()


def test_a_trial_on_the_simulated_binding_builds_no_overload_table(monkeypatch):
    # pybind11 registers a function's overloads once; the simulated binding did it again at
    # every call (about a hundred objects per trial before any runlist ran).
    backend = choose_backend("sim", "staging")
    _, spec = _spec([1, 1])
    run_trial(spec, backend)                       # caches filled
    made = []
    original = pybind.Overload.__init__

    def counting(self, *args, **kwargs):
        made.append(args[0] if args else kwargs.get("signature"))
        original(self, *args, **kwargs)
    monkeypatch.setattr(pybind.Overload, "__init__", counting)
    assert run_trial(spec, backend).state == "COMPLETED"
    assert made == []


@pytest.mark.parametrize("profile", ["staging", "staging,hang-at:3"])
def test_a_trial_runs_with_the_collector_paused_and_leaves_no_cycle_behind(profile):
    # completed or failed (a hang's TIMEOUT), a trial's objects are freed by their
    # reference counts, so pausing the collector for it loses no memory
    backend = choose_backend("sim", profile)
    _, spec = _spec([1] * 1000 + [4])
    run_trial(spec, backend)
    collections = []
    gc.callbacks.append(lambda phase, info: collections.append(phase))
    try:
        gc.collect()
        collections.clear()
        result = run_trial(spec, backend)
    finally:
        gc.callbacks.pop()
    # 1,001 runlists: at most the one collection due once the trial is over
    assert collections.count("start") <= 1
    assert result.state == ("COMPLETED" if profile == "staging" else "TIMEOUT")
    assert gc.isenabled()
    backend.prepare_trial(0)
    assert gc.collect() == 0


def test_a_spec_sent_to_a_worker_is_what_a_deep_copy_would_send():
    # to_json shares the spec's lists instead of copying them (dataclasses.asdict did)
    import dataclasses
    import json

    from harness.model.results import BufferSpec, CommandSpec, TrialSpec
    spec = TrialSpec(plan="p", chunks=[1, 2], trial=3, seed=4, xclbins={"a": "/x"},
                     runlist_context="a",
                     per_layer=[CommandSpec("K", "nop", [64], args=[[0, "bo", "b"]])],
                     buffers={"b": BufferSpec(64, "/d", 1, 2)}, order=[0, 0],
                     programs={"a": ["/e"]}, context_cfg={"a": {"q": 1}})
    assert json.dumps(spec.to_json()) == json.dumps(dataclasses.asdict(spec))
    assert TrialSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec


def test_an_overload_calls_the_method_as_the_class_has_it_now(monkeypatch, tmp_path):
    # the tables are made once, but they name methods: what wraps one later (XRT's
    # capture, harness.sim.capture_hooks) is what a call reaches
    import harness.sim.pyxrt as pyxrt
    from harness.formats.elf_writer import control_code_elf
    from harness.formats.txn import nop_stream
    from harness.sim import binding
    path = tmp_path / "code.elf"
    path.write_bytes(control_code_elf(nop_stream(4)))
    read = binding.elf._read
    seen = []

    def wrapped(self, name):
        seen.append(name)
        return read(self, name)
    monkeypatch.setattr(binding.elf, "_read", wrapped)
    pyxrt.elf(str(path))
    assert seen == [str(path)]
