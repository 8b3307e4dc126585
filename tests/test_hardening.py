"""Hostile files and paths: locks and artefacts pointed elsewhere, bad files taken for device
failures, sizes and depths past every limit. Each ends in one line and a clear exit
status, before any trial, with nothing outside the user's folders written or shipped."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from machines import stand_in_pack

from harness.app.cli import main
from harness.formats.elf_writer import control_code_elf
from harness.formats.txn import nop_stream
from harness.report.fileformat import load_report
from harness.report.lock import ReportLock


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def unfinished(tmp_path: Path, name: str = "r.yaml") -> Path:
    """A report as a run stopped after one of its two trials leaves it."""
    out = tmp_path / name
    done = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1", "--no-isolate",
                  "--out", str(out))
    assert done.exit_code == 0, done.output
    data = out.read_text().replace("trials: 1\n", "trials: 2\n", 1)
    out.write_text(re.sub(r"\nfinished: .*\n", "\nfinished: null\n", data, count=1))
    return out


# -- locks -------------------------------------------------------------------------------------

def test_a_symlinked_lock_is_refused_and_what_it_names_untouched(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / ".r.yaml.lock").symlink_to(victim)
    result = invoke("run", "minicpm5-2b-decode", "--no-isolate", "--trials", "1",
                    "--out", str(tmp_path / "r.yaml"))
    assert result.exit_code == 2
    assert "is a symlink; refusing to follow it" in result.output
    assert victim.read_text() == "precious\n" and not (tmp_path / "r.yaml").exists()


def test_a_hard_linked_lock_is_refused(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.link(victim, tmp_path / ".r.yaml.lock")
    result = invoke("run", "minicpm5-2b-decode", "--no-isolate", "--trials", "1",
                    "--out", str(tmp_path / "r.yaml"))
    assert result.exit_code == 2 and "not a plain file of its own" in result.output
    assert victim.read_text() == "precious\n"


def test_two_names_of_one_report_share_one_lock(tmp_path):
    real = unfinished(tmp_path)
    alias = tmp_path / "S.yaml"
    alias.symlink_to(real.name)
    assert ReportLock(alias).path == ReportLock(real).path
    held = ReportLock(real)
    held.acquire()
    try:
        refused = invoke("run", "--resume", str(alias))
        assert refused.exit_code == 2 and "another harness" in refused.output
    finally:
        held.release()


def test_resume_through_a_symlink_writes_the_file_it_points_at(tmp_path):
    real = unfinished(tmp_path)
    alias = tmp_path / "S.yaml"
    alias.symlink_to(real.name)
    done = invoke("run", "--resume", str(alias))
    assert done.exit_code == 0, done.output
    assert alias.is_symlink() and len(load_report(real).plans[0].trials) == 2


def test_a_lock_naming_a_live_pid_is_not_called_gone(tmp_path):
    out = unfinished(tmp_path)
    lock = tmp_path / ".r.yaml.lock"
    lock.write_text("1")                 # pid 1 always runs, but holds no lock of ours
    assert invoke("run", "--resume", str(out)).exit_code == 0
    notes = [n["note"] for n in load_report(out).notes]
    assert not any("no longer running" in n for n in notes)
    assert any("naming pid 1, which no longer held it" in n for n in notes)


# -- artefact paths stay in their document's folder ----------------------------------------

SECRET = b"SECRET-BYTES-0123456789abcdef" * 4


def recipe(folder: Path, ctrlcode: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    document = {"version": "1.0", "header": {"xclbin": "validate.xclbin"},
                "resources": {"buffers": [{"name": "a", "type": "input", "size": 20}],
                              "kernels": [{"name": "k", "instance": "DPU",
                                           "ctrlcode": ctrlcode}]},
                "execution": {"runs": [{"name": "k", "arguments": [{"name": "a",
                                                                     "argidx": 3}],
                                        "constants": [{"value": 3, "type": "int",
                                                       "argidx": 0}]}]}}
    path = folder / "recipe.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("how", ["climb", "absolute", "symlink"])
def test_a_recipe_cannot_name_a_file_outside_its_folder(tmp_path, how):
    outside = tmp_path / "private.elf"
    outside.write_bytes(control_code_elf(nop_stream(4)))
    folder = tmp_path / "downloaded"
    folder.mkdir()
    name = {"climb": "../private.elf", "absolute": str(outside), "symlink": "link.elf"}[how]
    if how == "symlink":
        (folder / "link.elf").symlink_to(outside)
    result = invoke("run", str(recipe(folder, name)), "--trials", "1", "--no-isolate",
                    "--out", str(tmp_path / "r.yaml"))
    assert result.exit_code == 2, result.output
    assert f"{name} " in result.output and f"outside {folder}" in result.output
    assert not (tmp_path / "r.yaml").exists()
    exported = invoke("export", str(recipe(folder, name)), str(tmp_path / "export"))
    assert exported.exit_code == 2 and not (tmp_path / "export").exists()


def test_a_capture_cannot_name_data_outside_its_folder(tmp_path):
    from captures import decode_capture
    folder = decode_capture(tmp_path / "capture", depth=4)
    (tmp_path / "secret.bin").write_bytes(SECRET)
    replay = json.loads((folder / "replay.json").read_text())
    replay["execution"]["frames"][0]["runs"][0]["arguments"][0]["fnm"] = "../secret.bin"
    (folder / "replay.json").write_text(json.dumps(replay))
    result = invoke("run", str(folder), "--trials", "1", "--no-isolate",
                    "--out", str(tmp_path / "r.yaml"))
    assert result.exit_code == 2 and "../secret.bin climbs out with '..'" in result.output


def own_case(folder: Path, instructions: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = (Path(__file__).parent.parent / "cases" / "nop-depth.yaml").read_text()
    path = folder / "case.yaml"
    path.write_text(text.replace("case: nop-depth", "case: own").replace(
        "instructions: nop", f"instructions: {instructions}"))
    return path


def test_a_case_of_ones_own_may_name_an_absolute_path_when_asked(tmp_path):
    insts = tmp_path / "elsewhere" / "insts.bin"
    insts.parent.mkdir()
    insts.write_bytes(nop_stream(4))
    case = own_case(tmp_path / "mine", str(insts))
    refused = invoke("run", str(case), "--trials", "1", "--no-isolate", "--out",
                     str(tmp_path / "r.yaml"))
    assert refused.exit_code == 2 and "--allow-outside-paths" in refused.output
    allowed = invoke("run", str(case), "--trials", "1", "--no-isolate", "--plan", "42",
                     "--allow-outside-paths", "--out", str(tmp_path / "r.yaml"))
    assert allowed.exit_code == 0, allowed.output
    again = invoke("run", str(case), "--trials", "1", "--no-isolate", "--out",
                   str(tmp_path / "r2.yaml"))
    assert again.exit_code == 2          # the permission was for that command only


# -- a file of the wrong kind is bad input, not a device failure ----------------------------

def test_an_instruction_file_that_is_no_txn_is_exit_2_before_any_trial(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "insts.bin").write_bytes(SECRET)
    result = invoke("run", str(own_case(tmp_path / "mine", "insts.bin")), "--trials", "1",
                    "--no-isolate", "--out", str(tmp_path / "r.yaml"))
    assert result.exit_code == 2 and "not an aie-rt TXN stream" in result.output
    assert "SECRET" not in result.output and not (tmp_path / "r.yaml").exists()
    assert len(result.output.strip().splitlines()) == 1


def test_a_control_code_that_is_no_elf_is_exit_2_before_any_trial(tmp_path):
    folder = tmp_path / "recipe"
    folder.mkdir()
    (folder / "ctrl.elf").write_bytes(SECRET)
    result = invoke("run", str(recipe(folder, "ctrl.elf")), "--trials", "1", "--no-isolate",
                    "--out", str(tmp_path / "r.yaml"))
    assert result.exit_code == 2 and "not an ELF file" in result.output
    assert "SECRET" not in result.output and not (tmp_path / "r.yaml").exists()
    git = invoke("run", str(recipe(folder, "ctrl.elf")), "--trials", "1", "--no-isolate",
                 "--exit-codes", "git-bisect", "--out", str(tmp_path / "r.yaml"))
    assert git.exit_code == 125          # git bisect skips: this commit was never tested


@pytest.mark.parametrize("content, words", [
    (None, "aie.elf is not in {folder}"),          # absent
    (SECRET, "not an ELF file"),                   # there, but no ELF
])
def test_a_full_elf_is_checked_one_way_by_every_document_that_names_it(tmp_path, content,
                                                                        words):
    """A recipe and a capture name a context's full ELF alike (`confine.artefact`): before
    the one check, a recipe said '<path> does not exist' where a capture said '<name> is
    not in <folder>'."""
    from captures import CaptureWriter

    from harness.model.errors import HarnessError
    from harness.sources.capture import load_capture
    from harness.sources.recipe import load_recipe
    recipe_folder = tmp_path / "recipe"
    recipe_folder.mkdir()
    document = {"version": "1.0", "resources": {
        "hwctxs": [{"name": "ctx", "programs": ["aie.elf"]}],
        "kernels": [{"name": "main", "instance": "main:sequence", "hwctx": "ctx"}]},
        "execution": {"runs": [{"name": "r", "kernel": "main"}]}}
    (recipe_folder / "recipe.json").write_text(json.dumps(document))
    writer = CaptureWriter(tmp_path / "capture")
    writer.frame([writer.raw_run(writer.elf_kernel(writer.program_hwctx()), {}, {})])
    capture_folder = writer.save()
    replay = json.loads((capture_folder / "replay.json").read_text())
    replay["resources"]["hwctxs"][0]["programs"] = ["aie.elf"]
    (capture_folder / "replay.json").write_text(json.dumps(replay))
    for folder, load in ((recipe_folder, lambda: load_recipe(str(recipe_folder /
                                                                 "recipe.json"))),
                         (capture_folder, lambda: load_capture(capture_folder))):
        if content is not None:
            (folder / "aie.elf").write_bytes(content)
        with pytest.raises(HarnessError) as raised:
            load()
        assert words.format(folder=folder) in str(raised.value), str(raised.value)
        assert "SECRET" not in str(raised.value)


def test_no_error_quotes_the_bytes_of_a_file_of_the_wrong_kind(tmp_path):
    wrong = tmp_path / "wrong.bin"
    wrong.write_bytes(SECRET)
    for args in (["xclbin", "inspect", str(wrong)], ["elf", "inspect", str(wrong)]):
        result = invoke(*args)
        assert result.exit_code == 2 and "SECRET" not in result.output, result.output


# -- serve-probe: a server's answer is input too --------------------------------------------

def serve_probe(behaviour, *args: str):
    from fakeflm import FakeFlm
    with FakeFlm(behaviour) as server:
        return invoke("serve-probe", "--url", server.url, "--model", "minicpm5:2b",
                      "--out", "", *args)


COMPLETION = ('{"model": "minicpm5:2b", "choices": [{"message": {"content": "Hi"}}], '
              '"usage": {"completion_tokens": 1}, "decoding_speed_tps": %s}')


@pytest.mark.parametrize("answer, words", [
    ('{"choices": "abc"}', "choices is the string 'abc', not a list"),
    ('{"choices": [{"message": {"content": 7}}]}', "choices[0].message.content is int 7"),
    ('{"choices": [1]}', "choices[0] is int 1, not an object"),
    ('{"choices": [{"message": {}}], "usage": [1]}', "usage is list [1], not an object"),
    ('{"choices": [{"message": {}}], "usage": {"completion_tokens": "1"}}',
     "usage.completion_tokens is the string '1', not an integer"),
    ('{"choices": [{"message": {}}], "choices": []}', "appears twice"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
])
def test_an_answer_of_the_wrong_shape_is_recorded_not_a_fault(tmp_path, answer, words):
    from fakeflm import Behaviour
    out = tmp_path / "s.yaml"
    # as recorded: a report written redacted withholds the server's text whole
    result = serve_probe(Behaviour(answer=answer, substitute=True), "--out", str(out),
                         "--no-made-up-tag", "--no-redact")
    assert result.exit_code == 1, result.output
    request = load_report(out).sections["server"]["requests"][0]
    assert request["outcome"] in ("unexpected", "bad-json") and words in request["error"], \
        request


def test_a_nan_speed_fails_the_plausibility_check(tmp_path):
    from fakeflm import Behaviour
    out = tmp_path / "s.yaml"
    result = serve_probe(Behaviour(answer=COMPLETION % "NaN"), "--out", str(out),
                         "--model-bytes", "2020000000", "--no-made-up-tag")
    assert "FAIL plausibility: request 0: the server reported nan tok/s" in result.output
    verdict = next(line for line in result.output.splitlines() if line.startswith("verdict"))
    assert "decode nan" not in verdict and "but: plausibility" in verdict


def test_a_made_up_tag_the_server_tried_and_failed_is_no_pass(tmp_path):
    from fakeflm import Behaviour
    result = serve_probe(Behaviour(unknown_tag="fail"), "--out", str(tmp_path / "s.yaml"))
    assert "WARN made-up tag" in result.output and "tried to serve it and failed" \
        in result.output
    honest = serve_probe(Behaviour(), "--out", str(tmp_path / "t.yaml"))
    assert "PASS made-up tag" in honest.output


# -- sizes and counts are checked arithmetically, before anything is built -------------------

@pytest.mark.parametrize("args, words", [
    (["bisect", "minicpm5-2b-decode", "--lo", "1", "--hi", "1000000000"], "1<=x<=100000"),
    (["bisect", "minicpm5-2b-decode", "--chunks-at", "100000000"], "1<=x<=100000"),
    (["sweep", "minicpm5-2b-decode", "--depths", "1..200000000", "--chunks", "21"],
     "200,000,000 is past the 100,000 layers"),
    (["sweep", "minicpm5-2b-decode", "--depths", "1.." + "9" * 40, "--chunks", "21"],
     "is past the 100,000 layers"),
    (["sweep", "minicpm5-2b-decode", "--depths", "21,42", "--chunks", "１"],
     "use numbers separated by commas"),
    (["run", "minicpm5-2b-decode", "--plan", "42", "--plan", "42"],
     "names plan '42' again"),
    (["run", "minicpm5-2b-decode", "--plan", "21+21", "--plan", "21 + 21"],
     "names plan '21+21' again"),
    (["run", "minicpm5-2b-decode", "--plan", "４２"], "does not parse"),
])
def test_past_every_limit_is_one_line_exit_2_in_bounded_memory(args, words):
    import resource
    import subprocess
    import sys

    def small() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    done = subprocess.run([sys.executable, "-m", "harness", *args, "--no-isolate", "--trials",
                           "1", "--out", os.devnull], capture_output=True, text=True,
                          timeout=60, preexec_fn=small)
    assert done.returncode == 2, done.stderr
    assert words in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_recipe_buffer_past_the_cap_is_bad_input(tmp_path):
    path = recipe(tmp_path / "r", "absent.elf")
    for size in (10 ** 12, 2 ** 64, (1 << 30) + 1):
        document = json.loads(path.read_text())
        document["resources"]["buffers"].append({"name": "big", "type": "internal",
                                                  "size": size})
        path.write_text(json.dumps(document))
        result = invoke("run", str(path), "--trials", "1", "--no-isolate",
                        "--out", str(tmp_path / "o.yaml"))
        assert result.exit_code == 2 and "over the 1 GiB a buffer may have" in result.output


def test_a_capture_buffer_past_the_cap_is_bad_input(tmp_path):
    from captures import decode_capture
    folder = decode_capture(tmp_path / "capture", depth=4)
    replay = json.loads((folder / "replay.json").read_text())
    replay["resources"]["buffers"][0]["size"] = 2 ** 64
    (folder / "replay.json").write_text(json.dumps(replay))
    result = invoke("run", str(folder), "--trials", "1", "--no-isolate")
    assert result.exit_code == 2 and "over the 1 GiB" in result.output


@pytest.mark.parametrize("document, words", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"version": "1.0", "version": "1.0"}', "key 'version' appears twice"),
])
def test_hostile_json_is_exit_2_naming_the_file(tmp_path, document, words):
    (tmp_path / "recipe.json").write_text(document)
    result = invoke("run", str(tmp_path / "recipe.json"))
    assert result.exit_code == 2 and words in result.output
    (tmp_path / "replay.json").write_text(document)
    result = invoke("run", str(tmp_path), "--trials", "1")
    assert result.exit_code == 2 and words in result.output and "replay.json" in result.output


def test_a_nul_in_a_name_is_bad_input(tmp_path):
    result = invoke("run", str(recipe(tmp_path / "r", "ctrl\0.elf")), "--no-isolate")
    assert result.exit_code == 2 and "NUL" in result.output


def test_deep_yaml_is_refused_not_a_crash(tmp_path):
    import subprocess
    import sys
    deep = tmp_path / "deep.yaml"
    deep.write_text("- " * 100_000 + "x\n")
    for args in (["run", str(deep)], ["report", "check", str(deep)],
                 ["report", "render", str(deep)]):
        done = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 2 and "nested more than 200 levels" in done.stderr + \
            done.stdout, (args, done.returncode, done.stderr)


def test_a_journal_entry_nested_deep_or_with_a_key_twice_is_bad_input(tmp_path):
    out = unfinished(tmp_path)
    text = out.read_text()
    for line in ['- ' + '{"a":' * 100_000 + '1' + '}' * 100_000 + '\n',
                 '- {"note": {"at": "x", "at": "y", "note": "n"}}\n']:
        out.write_text(text + line)
        result = invoke("run", "--resume", str(out))
        assert result.exit_code == 2, result.output
        assert re.search(r"r\.yaml:\d+: journal entry", result.output), result.output


# -- a continued report runs as it began --------------------------------------------------------

def test_resume_refuses_settings_it_would_ignore_naming_the_reports(tmp_path):
    out = unfinished(tmp_path)
    before = out.read_bytes()
    result = invoke("run", "--resume", str(out), "--profile", "mainline", "--trials", "5",
                    "--flow", "instr-bo", "--deadline", "3")
    assert result.exit_code == 2
    for words in ("--profile (the report's: mainline)", "--trials (the report's: 2)",
                  "--flow (the report's: elf)", "--deadline (the report's: the default)"):
        assert words in result.output
    assert out.read_bytes() == before


# -- folders that cannot be written ----------------------------------------------------------

@pytest.fixture
def read_only(tmp_path, monkeypatch):
    """`tmp_path/ro` as a read-only file system answers (EROFS for any write or create),
    whoever runs the tests: root is not stopped by modes."""
    import errno
    import tempfile
    folder = tmp_path / "ro"
    folder.mkdir()
    real_open, real_mkstemp, real_mkdir = os.open, tempfile.mkstemp, os.mkdir

    def refused(path) -> OSError:
        return OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    def ro_open(path, flags, *args, **kwargs):
        if str(path).startswith(str(folder)) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise refused(path)
        return real_open(path, flags, *args, **kwargs)

    def ro_mkstemp(*args, dir=None, **kwargs):
        if dir is not None and str(dir).startswith(str(folder)):
            raise refused(dir)
        return real_mkstemp(*args, dir=dir, **kwargs)

    def ro_mkdir(path, *args, **kwargs):
        if str(path).startswith(str(folder)):
            raise refused(path)
        return real_mkdir(path, *args, **kwargs)
    monkeypatch.setattr(os, "open", ro_open)
    monkeypatch.setattr(os, "mkdir", ro_mkdir)
    monkeypatch.setattr(tempfile, "mkstemp", ro_mkstemp)
    return folder


def test_read_only_folders_are_exit_3_in_one_line(tmp_path, read_only):
    stopped = unfinished(tmp_path)
    finished = tmp_path / "done.yaml"
    invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "1", "--no-isolate",
           "--out", str(finished))
    (read_only / "r.yaml").write_bytes(stopped.read_bytes())
    (read_only / "done.yaml").write_bytes(finished.read_bytes())
    pack = stand_in_pack(tmp_path / "pack", "Pack")
    before = {p.name: p.read_bytes() for p in read_only.iterdir()}
    for args in (["run", "--resume", str(read_only / "r.yaml")],
                 ["report", "render", str(finished), "--out", str(read_only / "r.md")],
                 ["report", "bundle", str(read_only / "done.yaml")],
                 ["export", "minicpm5-2b-decode", str(read_only / "export")],
                 ["xclbins", "import", str(pack), "--dest", str(read_only / "packs")]):
        result = invoke(*args)
        assert result.exit_code == 3, (args, result.output)
        assert "Read-only file system (EROFS)" in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
    assert {p.name: p.read_bytes() for p in read_only.iterdir()} == before


# -- validate and resume read a report alike --------------------------------------------------

def test_validate_and_resume_agree_on_every_truncation_offset(tmp_path, monkeypatch):
    from harness.execution.resume import reopen
    from harness.model.errors import HarnessError
    from harness.report.check import check_report_file
    source = unfinished(tmp_path)
    # what is checked is that checking and resuming agree, not that bytes reach the disk
    # (tests/test_reliability.py kills writers): each resume's rewrite skips its fsync,
    # which on a busy disk cost this test most of its time
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    data = source.read_bytes()
    journal = data.index(b"\njournal:\n")
    # every offset from just before the journal on, a stride through the header
    offsets = sorted(set(range(0, journal - 40, 97)) | set(range(journal - 40, len(data) + 1)))
    disagreements = []
    copy = tmp_path / "cut.yaml"
    for offset in offsets:
        copy.write_bytes(data[:offset])
        valid = check_report_file(str(copy)).valid
        try:
            runner, _ = reopen(str(copy))
            runner.handle.close()
            resumed = True
        except HarnessError:
            resumed = False
        if valid != resumed:
            disagreements.append((offset, valid, resumed))
    assert not disagreements, disagreements[:5]
    assert len(offsets) > 250


@pytest.mark.parametrize("sort_keys, comment", [(True, ""), (False, "# looked at\n"),
                                                (True, "# a note\n")])
def test_a_report_rewritten_by_a_yaml_tool_is_still_a_report(tmp_path, sort_keys, comment):
    import yaml
    out = unfinished(tmp_path)
    document = yaml.safe_load(out.read_text())
    out.write_text(yaml.safe_dump(document, sort_keys=sort_keys) + comment)
    validation = invoke("report", "check", str(out))
    assert validation.exit_code == 0, validation.output
    assert "a YAML tool rewrote this report" in validation.output
    assert "unknown report schema None" not in validation.output
    rendered = invoke("report", "render", str(out))
    assert rendered.exit_code == 0 and "a YAML tool rewrote" in rendered.stderr
    resumed = invoke("run", "--resume", str(out))
    assert resumed.exit_code == 0, resumed.output
    report = load_report(out)
    assert len(report.plans[0].trials) == 2 and not report.read_whole
    assert any("restored its own layout" in n["note"] for n in report.notes)
    assert invoke("report", "check", str(out)).output.strip().endswith("valid")


def test_a_plan_whose_chunks_are_not_its_spec_is_invalid(tmp_path):
    out = unfinished(tmp_path)
    out.write_text(out.read_text().replace("chunks:\n  - 42", "chunks:\n  - 40\n  - 2", 1))
    result = invoke("report", "check", str(out))
    assert result.exit_code == 2 and "spec '42' makes chunks [42]" in result.output
    assert invoke("run", "--resume", str(out)).exit_code == 2


def test_a_finished_report_whose_journal_lost_its_tail_is_invalid(tmp_path):
    out = tmp_path / "done.yaml"
    invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "2", "--no-isolate",
           "--profile", "inflight-cap:40", "--out", str(out))
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:-1]))            # the last trial's entry is gone
    result = invoke("report", "check", str(out))
    assert result.exit_code == 2 and "is not what its trials say" in result.output


# -- a full disk -------------------------------------------------------------------------------

def test_finishing_on_a_nearly_full_disk_keeps_a_whole_continuable_report(tmp_path,
                                                                          monkeypatch):
    from types import SimpleNamespace

    from harness.report import journal as reportfile
    from harness.report.check import check_report_file
    out = tmp_path / "r.yaml"
    monkeypatch.setattr(reportfile.os, "statvfs",
                        lambda path: SimpleNamespace(f_bavail=16, f_frsize=4096))
    result = invoke("run", "minicpm5-2b-decode", "--plan", "42", "--trials", "2",
                    "--no-isolate", "--out", str(out))
    assert result.exit_code == 4
    assert "rewriting the header needs about" in result.stderr
    assert f"run --resume {out}" in result.stderr
    assert check_report_file(str(out)).valid and load_report(out).finished is None
    assert len(load_report(out).plans[0].trials) == 2
    assert not list(tmp_path.glob(".r.yaml.*")), list(tmp_path.iterdir())   # no temp, no lock
    monkeypatch.undo()
    done = invoke("run", "--resume", str(out))
    assert done.exit_code == 0, done.output
    assert load_report(out).finished and len(load_report(out).plans[0].trials) == 2


def test_no_lock_file_is_left_when_the_disk_is_full(tmp_path, monkeypatch):
    import errno
    real_write = os.write

    def full(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr("harness.report.journal.os.write", full)
    result = invoke("run", "minicpm5-2b-decode", "--no-isolate", "--out",
                    str(tmp_path / "r.yaml"))
    monkeypatch.setattr("harness.report.journal.os.write", real_write)
    assert result.exit_code == 3, result.output
    assert not list(tmp_path.glob("*r.yaml*"))


# -- what killed runs leave behind ----------------------------------------------------------

def test_the_worker_folder_of_a_killed_run_is_swept_by_the_next(tmp_path):
    import signal
    import subprocess
    import sys
    import time
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    out = tmp_path / "killed.yaml"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "minicpm5-2b-decode",
                             "--plan", "42", "--trials", "2", "--profile",
                             "hang-at:3,realtime", "--out", str(out)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(400):
            if out.exists() and '"status": "in-flight"' in out.read_text():
                break
            time.sleep(0.025)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    [left] = tmp_path.glob("harness-workers-*")
    owners = [int(p) for p in (left / "owners").read_text().split()]
    for _ in range(200):                    # the server follows its harness (PDEATHSIG)
        if not any(Path(f"/proc/{pid}").exists() for pid in owners):
            break
        time.sleep(0.05)
    live = tmp_path / "harness-workers-live"
    live.mkdir()
    (live / "owners").write_text(f"{os.getpid()}\n")       # a run still going: kept
    done = subprocess.run([sys.executable, "-m", "harness", "run", "minicpm5-2b-decode",
                           "--plan", "42", "--trials", "1", "--out", str(tmp_path / "n.yaml")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not left.exists() and live.exists()


# -- the documented git bisect recipe (docs/bisect-and-sweep.md), as dash runs it -----------

def documented_bisect_script() -> str:
    page = (Path(__file__).parent.parent / "docs" / "bisect-and-sweep.md").read_text()
    return re.search(r"git bisect run sh -c '(.*?)'\n```", page, re.S).group(1)


@pytest.mark.parametrize("build, setup, expected", [
    ("exit 1", None, 125),                        # does not build: skipped
    ("exit 0", None, 125),                        # built, but no setup script: skipped
    ("exit 0", "export exit_code=1", 1),                 # the harness saw the failure: bad
    ("exit 0", "export exit_code=0", 0),                 # every trial completed: good
])
def test_the_documented_bisect_recipe_runs_under_dash(tmp_path, build, setup, expected):
    import shutil
    import subprocess
    shell = shutil.which("dash") or shutil.which("sh")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "build.sh").write_text(f"#!/bin/sh\n{build}\n")
    (tmp_path / "build" / "build.sh").chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if setup:
        folder = tmp_path / "build/Release/opt/xilinx/xrt"
        folder.mkdir(parents=True)
        # the XRT setup script puts tools on PATH; here, a harness that exits as told
        (folder / "setup.sh").write_text(f'{setup}\nexport PATH="{bin_dir}:$PATH"\n')
        (bin_dir / "runlist-harness").write_text('#!/bin/sh\nexit "$exit_code"\n')
        (bin_dir / "runlist-harness").chmod(0o755)
    done = subprocess.run([shell, "-c", documented_bisect_script()], cwd=tmp_path,
                          capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == expected, done.stderr


# -- the journal copied a block at a time ----------------------------------------------------

@pytest.mark.parametrize("block", [1, 3, 7, 64, 1 << 20])
def test_the_journal_is_copied_block_by_block_as_it_is(tmp_path, monkeypatch, block):
    import io

    from harness.report import journal as reportfile
    monkeypatch.setattr(reportfile, "COPY_BLOCK", block)
    out = unfinished(tmp_path)
    text = out.read_bytes()
    entries = text[text.index(b"\njournal:\n") + len(b"\njournal:\n"):]
    for torn in (False, True):
        handle = reportfile.ReportFile.reopen(out)
        try:
            if torn:
                out.write_bytes(text + b'- {"trial": {"pla')
                handle.report.torn_line = 999
            copied = io.BytesIO()
            handle._copy_journal(copied)
        finally:
            handle.close()
        assert copied.getvalue() == entries
