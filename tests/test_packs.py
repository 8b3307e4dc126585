"""Where xclbins come from, stand-ins, XRT's validate archive, and `xclbins import`."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from machines import ar_archive

from harness.app.cli import main
from harness.formats.ar import read_ar_member
from harness.formats.xclbin import read_xclbin
from harness.formats.xclbin_writer import flm_spec, synthesize, validate_spec
from harness.formats.yamlio import load_yaml_text
from harness.model.errors import BadInput
from harness.sources.load import load_case
from harness.sources.packs import import_pack, resolve_pack

ROLES = ("attn", "mm", "layer", "dequant")


def make_pack(folder: Path, name: str = "P") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for role in ROLES:
        (folder / f"{role}.xclbin").write_bytes(synthesize(flm_spec(f"{name}/{role}")))
    return folder


@pytest.fixture
def case():
    return load_case("minicpm5-2b-decode")


def test_xclbins_option_first(tmp_path, case, monkeypatch):
    make_pack(tmp_path / "given" / "MiniCPM5-2B-NPU2")
    make_pack(tmp_path / "flm" / "MiniCPM5-2B-NPU2")
    monkeypatch.setenv("FLM_XCLBIN_PATH", str(tmp_path / "flm"))
    pack = resolve_pack(case, xclbins_dir=str(tmp_path / "given"), simulated=False)
    assert pack.source == str(tmp_path / "given" / "MiniCPM5-2B-NPU2")


def test_project_xclbins_folder_then_flm_path(tmp_path, case, monkeypatch):
    make_pack(tmp_path / "flm" / "MiniCPM5-2B-NPU2")
    monkeypatch.setenv("FLM_XCLBIN_PATH", str(tmp_path / "flm"))
    assert resolve_pack(case, simulated=False).source.startswith(str(tmp_path / "flm"))
    make_pack(Path("xclbins") / "MiniCPM5-2B-NPU2")     # cwd is this test's tmp_path
    assert resolve_pack(case, simulated=False).source == \
        str(Path.cwd() / "xclbins" / "MiniCPM5-2B-NPU2")


def test_beside_the_flm_binary(tmp_path, case, monkeypatch):
    bindir = tmp_path / "opt" / "bin"
    bindir.mkdir(parents=True)
    flm = bindir / "flm"
    flm.write_text("#!/bin/sh\n")
    flm.chmod(flm.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    make_pack(tmp_path / "opt" / "share" / "flm" / "xclbins" / "MiniCPM5-2B-NPU2")
    pack = resolve_pack(case, simulated=False)
    assert pack.source == str(tmp_path / "opt" / "share" / "flm" / "xclbins" /
                              "MiniCPM5-2B-NPU2")


def test_stand_ins_only_on_the_simulator(tmp_path, case, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    pack = resolve_pack(case, simulated=True)
    assert pack.stand_ins and set(pack.files) == set(ROLES)
    meta = read_xclbin(pack.files["layer"])
    assert meta.synthetic and meta.kernel("MLIR_AIE").args[2].name == "ninstr"
    validate = resolve_pack(load_case("nop-depth"), simulated=True)
    assert read_xclbin(validate.files["validate"]).kernels[0].name == "DPU"


def test_read_ar_member_including_long_names(tmp_path):
    archive = tmp_path / "xrt_smi_strx.a"
    archive.write_bytes(ar_archive({"nop.elf": b"\x7fELF123", "a-very-long-member-name.bin":
                                    b"odd", "validate.xclbin": b"payload!"}))
    assert read_ar_member(archive, "validate.xclbin") == b"payload!"
    assert read_ar_member(archive, "a-very-long-member-name.bin") == b"odd"
    assert read_ar_member(archive, "missing") is None


def test_validate_pack_comes_from_the_xrt_archive(tmp_path, monkeypatch):
    xrt = tmp_path / "xrt"
    bins = xrt / "share" / "amdxdna" / "bins"
    bins.mkdir(parents=True)
    real = synthesize(validate_spec("from-archive"))
    (bins / "xrt_smi_strx.a").write_bytes(ar_archive({"validate.xclbin": real}))
    monkeypatch.setenv("XILINX_XRT", str(xrt))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    pack = resolve_pack(load_case("nop-depth"), simulated=False)
    assert pack.source == str(bins / "xrt_smi_strx.a")
    assert pack.files["validate"].read_bytes() == real


def test_import_writes_manifest_and_refuses_to_clobber(tmp_path):
    source = make_pack(tmp_path / "src" / "Demo-NPU2", "Demo")
    target, entries = import_pack(str(source), dest_root=str(tmp_path / "xclbins"))
    assert target == tmp_path / "xclbins" / "Demo-NPU2"
    manifest = load_yaml_text((target / "manifest.yaml").read_text())
    assert manifest["pack"] == "Demo-NPU2"
    assert {e["file"] for e in manifest["files"]} == {f"{r}.xclbin" for r in ROLES}
    assert all(len(e["sha256"]) == 64 and e["uuid"] for e in manifest["files"])
    (source / "layer.xclbin").write_bytes(synthesize(flm_spec("changed")))
    with pytest.raises(BadInput, match="exists and differs"):
        import_pack(str(source), dest_root=str(tmp_path / "xclbins"))
    import_pack(str(source), dest_root=str(tmp_path / "xclbins"), force=True)
    assert (target / "layer.xclbin").read_bytes() == (source / "layer.xclbin").read_bytes()


def test_import_from_a_folder_of_packs_needs_pack(tmp_path):
    make_pack(tmp_path / "all" / "A-NPU2")
    make_pack(tmp_path / "all" / "B-NPU2")
    with pytest.raises(BadInput, match="add --pack NAME"):
        import_pack(str(tmp_path / "all"))
    target, _ = import_pack(str(tmp_path / "all"), pack="B-NPU2",
                            dest_root=str(tmp_path / "x"))
    assert target.name == "B-NPU2"


def test_import_cli_names_known_files(shared_xclbins, tmp_path):
    result = CliRunner().invoke(main, ["xclbins", "import", str(shared_xclbins), "--pack",
                                       "Qwen3-1.7B-NPU2", "--dest", str(tmp_path / "x")])
    assert result.exit_code == 0, result.output
    assert "known as Qwen3-1.7B-NPU2/layer.xclbin" in result.output
    where = CliRunner().invoke(main, ["xclbins", "where", "qwen3-1.7b-decode", "--xclbins",
                                      str(tmp_path / "x")])
    assert where.exit_code == 0 and "Qwen3-1.7B-NPU2" in where.output
