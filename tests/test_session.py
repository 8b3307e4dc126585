"""One trial through the pyxrt API, in process, against the simulated stack."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from harness.execution.backend import choose_backend
from harness.execution.session import _runlist_builder, run_trial
from harness.formats.txn import nop_stream
from harness.formats.xclbin_writer import flm_spec, synthesize
from harness.model.results import CommandSpec, TrialSpec, chain_split


def spec_for(tmp_path, chunks, *, instructions="nop", roles=("attn", "layer"), columns=8):
    files = {}
    for role in roles:
        path = tmp_path / f"{role}.xclbin"
        path.write_bytes(synthesize(flm_spec(f"S/{role}", columns=columns)))
        files[role] = str(path)
    return TrialSpec(plan="p", chunks=chunks, trial=0, seed=5, xclbins=files,
                     runlist_context="layer",
                     per_layer=[CommandSpec("MLIR_AIE", instructions, [4096] * 5)])


def test_chain_split():
    assert chain_split(42, 24) == [24, 18]
    assert chain_split(24, 24) == [24]
    assert chain_split(0, 24) == []


@given(st.integers(0, 5000), st.integers(1, 100))
def test_chain_split_is_xrts_chaining_loop(runs, size):
    # runlist_impl: chains of `size` from the front, the rest in the last
    assert chain_split(runs, size) == [min(size, runs - start)
                                       for start in range(0, runs, size)]


@given(st.lists(st.lists(st.integers(0, 12), max_size=9, unique=True), min_size=1,
                max_size=4), st.integers(0, 5))
def test_the_runlist_builder_calls_what_a_loop_over_the_arguments_would(shapes, layers):
    calls: list[tuple] = []

    class Run:
        def __init__(self, kernel):
            calls.append(("run", kernel))

        def set_arg(self, index, value):
            calls.append(("set_arg", index, value))

    commands = [(f"k{c}", [(index, f"v{c}.{index}") for index in shape])
                for c, shape in enumerate(shapes)]
    flat = [item for kernel, args in commands for item in (kernel, *(v for _, v in args))]
    added: list = []
    kept = [None] * (layers * len(commands))
    _runlist_builder(tuple(tuple(shape) for shape in shapes))(
        Run, lambda r: calls.append(("add",)) or added.append(r), kept, layers, *flat)
    expected: list[tuple] = []
    for _ in range(layers):
        for kernel, args in commands:
            expected += [("run", kernel), *(("set_arg", i, v) for i, v in args), ("add",)]
    assert calls == expected
    assert kept == added and len(set(map(id, kept))) == len(kept)   # each run, in its place


def test_every_xclbin_gets_a_live_context(tmp_path):
    backend = choose_backend("sim", "staging")
    result = run_trial(spec_for(tmp_path, [42], roles=("attn", "mm", "layer", "dequant")),
                       backend)
    assert result.status == "completed"
    from harness.sim import control
    labels = {job.ctx.label for job in control.current().jobs}
    assert labels == {"layer"}                       # runlists only in the layer context
    assert result.runlists[0].chains == [24, 18] and result.runlists[0].device_ms == 2.1


def test_user_instruction_file(tmp_path):
    insts = tmp_path / "insts.bin"
    insts.write_bytes(nop_stream(8))
    result = run_trial(spec_for(tmp_path, [3], instructions=str(insts)),
                       choose_backend("sim", "staging"))
    assert result.status == "completed"


def test_bad_instruction_file_is_a_firmware_error(tmp_path):
    insts = tmp_path / "insts.bin"
    insts.write_bytes(b"\0" * 64)
    result = run_trial(spec_for(tmp_path, [3], instructions=str(insts)),
                       choose_backend("sim", "staging"))
    assert result.status == "failed" and result.state == "ERROR"
    assert result.runlists[0].failing_run == 0


def test_setup_refused_by_the_stack_is_a_failed_trial(tmp_path):
    # an 8-column partition on a 4-column NPU1: XRT refuses the hardware context
    result = run_trial(spec_for(tmp_path, [3]), choose_backend("sim", "device:npu1"))
    assert result.status == "failed"
    assert "set-up failed" in result.error and "hardware context" in result.error


def test_each_trial_gets_a_fresh_device(tmp_path):
    backend = choose_backend("sim", "inflight-cap:40")
    first = run_trial(spec_for(tmp_path, [42]), backend)
    second = run_trial(spec_for(tmp_path, [21, 21]), backend)
    assert first.state == "TIMEOUT" and second.state == "COMPLETED"
    assert second.runlists[0].device_ms == 21 * 0.05


def test_a_failed_submit_is_recorded_and_the_list_still_waited_on(tmp_path, monkeypatch):
    from harness.sim import runs
    waited = []
    monkeypatch.setattr(runs.runlist, "execute",
                        lambda self: (_ for _ in ()).throw(RuntimeError("submit ioctl failed")))
    monkeypatch.setattr(runs.runlist, "wait", lambda self, *a: waited.append(True))
    result = run_trial(spec_for(tmp_path, [3]), choose_backend("sim", "staging"))
    outcome = result.runlists[0]
    assert result.status == "failed" and outcome.state == "submit-failed"
    assert outcome.message == "execute: submit ioctl failed" and waited == [True]


def test_a_wait_error_worded_like_a_submit_failure_is_still_located(tmp_path, monkeypatch):
    """Whether the submit failed is what happened, not what the message starts with: a
    wait error whose own text begins "execute: " is the device's, located in the runs
    (the old parse took it for a submit that never went out)."""
    from harness.sim import runs
    wait = runs.runlist.wait

    def worded(self, *args):
        try:
            return wait(self, *args)
        except RuntimeError as err:
            raise RuntimeError(f"execute: {err}") from None
    monkeypatch.setattr(runs.runlist, "wait", worded)
    result = run_trial(spec_for(tmp_path, [42]),
                       choose_backend("sim", "staging,inflight-cap:37"))
    outcome = result.runlists[0]
    assert outcome.message.startswith("execute: runlist failed execution")
    assert outcome.state != "submit-failed" and outcome.failing_run is not None


def test_every_runlist_gets_new_run_objects_so_no_corrupted_payload_is_resubmitted(tmp_path):
    """After a failure the staging driver (and mainline from 7.0) leaves 0xFF and health
    data over sub-command 0's payload, and XRT never re-encodes it: re-executing the same
    run objects would submit garbage. The harness builds new runs for every runlist (and
    everything for every trial), so a second runlist in the same trial fails as the first
    did, at the hang, not at a corrupted command."""
    for profile in ("staging,hang-at:30", "mainline,hang-at:30"):
        backend = choose_backend("sim", profile)
        spec = spec_for(tmp_path, [42, 42])
        spec.continue_after_failure = True
        result = run_trial(spec, backend)
        assert [o.state for o in result.runlists] == ["TIMEOUT", "TIMEOUT"], profile
        assert [o.failing_run for o in result.runlists] == [24, 24]


def test_warming_a_fork_server_never_touches_the_hardware():
    """The fork server must not open the device (a child of a process that loaded XRT's
    libraries inherits their state): warm-up is for the simulated stack only."""
    from types import SimpleNamespace

    from harness.execution.backend import HardwareBackend
    from harness.execution.session import warm

    class Untouchable:
        def __getattr__(self, name):
            raise AssertionError(f"the server touched pyxrt.{name}")
    warm(SimpleNamespace(), HardwareBackend(Untouchable()))     # returns before any use


def test_a_fork_server_rehearses_on_the_documented_stack_and_no_trial_sees_it(tmp_path):
    """warm() runs the trial's runlists on throw-away devices of the documented stack below
    the profile (every hypothesis off, the virtual clock: a real-time hang there would block
    the server, a seeded fault play out), counts no XRT frame, and a trial after it answers
    exactly what a trial in a process that never warmed answers."""
    from harness.execution import session
    from harness.sim import control
    from harness.sim.profiles import parse_profile

    profile = "mainline,kernel:7.0,hang-at:3,flaky:0.5,seed:7"
    base = parse_profile(profile + ",realtime").documented_base()
    assert base.documented and not base.realtime and base.seed == 0
    assert (base.flavour, base.kernel) == ("mainline", "7.0")
    spec = spec_for(tmp_path, [42, 21])
    cold = run_trial(spec, choose_backend("sim", profile))
    warmed = choose_backend("sim", profile)
    frames = session._runlists_executed
    session.warm(spec, warmed, rehearsals=3)
    assert control.current().profile == warmed.played.documented_base()
    assert session._runlists_executed == frames
    again = run_trial(spec, warmed)
    assert again.runlists[0].state == "TIMEOUT"
    def answered(result):                        # all but the host's own wall time
        return [{k: v for k, v in o.to_json().items() if k != "wall_ms"}
                for o in result.runlists]
    assert answered(again) == answered(cold)


def test_a_control_code_file_gone_or_changed_between_trials_is_made_again(tmp_path,
                                                                          monkeypatch):
    """A trial takes the control code's ELF the previous one found while the file stays as
    it was, and has it made again when it is not: removed, or rewritten; and a cache
    elsewhere (XDG_CACHE_HOME) gets a file of its own."""
    from harness.execution import session
    from harness.formats.elf_writer import control_code_file

    monkeypatch.setattr(session, "_CONTROL_CODE_FILES", {})     # this test's trials only
    spec = spec_for(tmp_path, [4])
    spec.per_layer[0].flow = "elf"
    backend = choose_backend("sim", "staging")
    assert run_trial(spec, backend).status.value == "completed"
    ((stream, _, _), (path, _, _)), = session._CONTROL_CODE_FILES.items()
    assert str(control_code_file(stream)) == path
    for change in ("remove", "rewrite"):
        if change == "remove":
            os.unlink(path)
        else:
            with open(path, "wb") as out:
                out.write(b"not an ELF")
        result = run_trial(spec, backend)
        assert result.status.value == "completed", (change, result.error)
        assert control_code_file(stream).read_bytes()[:4] == b"\x7fELF"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "elsewhere"))
    assert run_trial(spec, backend).status.value == "completed"
    assert list((tmp_path / "elsewhere").rglob("*.elf"))


def test_the_simulated_binding_reads_an_elf_file_again_once_it_changed(tmp_path):
    """pyxrt.elf(path) reads the file (elf_impl): its parse is kept only while the file's
    size and time stay the same, so a file rewritten reads as what it now holds."""
    import harness.sim.pyxrt as pyxrt
    from harness.formats.elf_writer import control_code_elf

    path = tmp_path / "k.elf"
    path.write_bytes(control_code_elf(nop_stream(4)))
    assert pyxrt.elf(str(path))._parsed() is pyxrt.elf(str(path))._parsed()
    path.write_bytes(b"garbage, and longer than nothing")
    try:
        pyxrt.elf(str(path))
    except RuntimeError as err:
        assert "not a valid ELF" in str(err)
    else:
        raise AssertionError("a file no longer an ELF was read as the old one")
