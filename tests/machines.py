"""A fabricated machine under a test's folder: /proc, /sys, /dev, /etc as the probe reads them."""

from __future__ import annotations

import json
import types
from pathlib import Path

from harness.formats.xclbin_writer import flm_spec, synthesize
from harness.probe.readers import Identity, Sources

RELEASE = "7.0.0-31-generic"
NOBODY = Identity(uid=54321, gids=(54321,), user="porter", emulate=True)


class Tree:
    """A fake machine under tmp_path."""

    def __init__(self, base: Path) -> None:
        self.root = base / "machine"
        self.write("/proc/sys/kernel/osrelease", RELEASE)
        self.write("/proc/cmdline", f"BOOT_IMAGE=/vmlinuz-{RELEASE} root=UUID=x iommu=pt quiet")
        self.write("/proc/cpuinfo", "".join(
            f"processor\t: {i}\nmodel name\t: AMD RYZEN AI MAX+ 395 w/ Radeon 8060S\n\n"
            for i in range(32)))
        self.write("/proc/meminfo", "MemTotal:       131072000 kB\n")
        self.write("/etc/os-release", 'PRETTY_NAME="Ubuntu 26.04 LTS"\n')
        self.maps = ""
        self.pyxrt = None

    def write(self, path: str, text: str, mode: int = 0o644) -> Path:
        target = self.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(mode)
        return target

    def npu(self, device="17f0", revision="0x11", fw="1.1.2.65", mode=0o660) -> None:
        self.write("/dev/accel/accel0", "", mode)
        base = "/sys/class/accel/accel0/device"
        self.write(f"{base}/vendor", "0x1022")
        self.write(f"{base}/device", f"0x{device}")
        self.write(f"{base}/revision", revision)
        self.write(f"{base}/fw_version", fw)
        self.write(f"{base}/vbnv", "RyzenAI-npu5")
        self.write(f"{base}/device_type", "1")

    def identity(self, bdf: str = "0000:c7:00.1") -> None:
        """What maintainers ask for beyond the driver: the function's place and IOMMU
        domain, runtime PM, DMI, firmware files, a boot log in /dev/kmsg, xrt-smi, and a
        ROCm process holding /dev/kfd."""
        base = "/sys/class/accel/accel0/device"
        self.write(f"{base}/uevent", f"DRIVER=amdxdna\nPCI_CLASS=118000\nPCI_SLOT_NAME={bdf}\n")
        self.write(f"{base}/iommu_group/type", "DMA-FQ")
        self.write(f"{base}/power/runtime_status", "active")
        self.write(f"{base}/power/control", "auto")
        for key, value in {"sys_vendor": "Framework",
                           "product_name": "Desktop (AMD Ryzen AI Max 300 Series)",
                           "board_name": "FRANMFCP06", "bios_vendor": "INSYDE Corp.",
                           "bios_version": "03.04", "bios_date": "10/01/2025",
                           "product_serial": "FRAMESERIAL123"}.items():
            self.write(f"/sys/class/dmi/id/{key}", value)
        self.write("/lib/firmware/amdnpu/17f0_11/npu_7.sbin", "fw")
        self.write("/lib/firmware/amdnpu/17f0_11/npu.sbin", "fw")
        self.write("/dev/kmsg",
                   "6,10,4000000,-;Linux version 7.0.0-31-generic\n"
                   f"6,11,5100000,-;amdxdna {bdf}: [drm] Load firmware amdnpu/17f0_11/npu_7.sbin\n"
                   " SUBSYSTEM=pci\n DEVICE=+pci:0000:c7:00.1\n")
        self.write("/usr/bin/xrt-smi",
                   "#!/bin/sh\necho \"xrt-smi $1: Device(s) Present\"\n"
                   "echo \"|[0000:c7:00.1]  |NPU Strix Halo  |\"\n", 0o755)
        self.write("/proc/4242/comm", "ollama-rocm")
        fd = self.root / "proc" / "4242" / "fd"
        fd.mkdir(parents=True, exist_ok=True)
        (fd / "3").symlink_to("/dev/kfd")
        (fd / "4").symlink_to("/dev/null")

    def module(self, params: dict[str, str], *, version: str | None = None,
               module_file: str | None = None, name: str = "amdxdna",
               param_mode: int = 0o644) -> None:
        (self.root / "sys" / "module" / name / "parameters").mkdir(parents=True, exist_ok=True)
        for key, value in params.items():
            self.write(f"/sys/module/{name}/parameters/{key}", value, param_mode)
        if version:
            self.write(f"/sys/module/{name}/version", version)
        if module_file:
            self.write(f"/lib/modules/{RELEASE}/modules.dep", f"{module_file}: \n")

    def xrt(self, version: str = "2.26.0", runlist: bool = True) -> None:
        folder = self.root / "opt" / "xilinx" / "xrt"
        self.write("/opt/xilinx/xrt/version.json", json.dumps({"BUILD_VERSION": version}))
        module = types.SimpleNamespace(__file__=str(folder / "python" / "pyxrt.so"))
        if runlist:
            module.runlist = object
        self.pyxrt = module

    def sources(self, identity: Identity = NOBODY, drm=None, memlock=(2**63, 2**63)) -> Sources:
        return Sources(root=self.root, env={"PATH": "/usr/bin:/bin"}, identity=identity,
                       drm=drm, read_maps=lambda: self.maps,
                       import_pyxrt=lambda: (self.pyxrt, "ModuleNotFoundError: no pyxrt")
                       if self.pyxrt is None else (self.pyxrt, ""),
                       memlock=lambda: memlock)


def stand_in_pack(folder: Path, label: str) -> Path:
    """A pack of FastFlowLM's four roles, synthesized (kernel signatures only); `label`
    keeps each test's xclbins apart by hash."""
    folder.mkdir(parents=True, exist_ok=True)
    for role in ("attn", "mm", "layer", "dequant"):
        (folder / f"{role}.xclbin").write_bytes(synthesize(flm_spec(f"{label}/{role}")))
    return folder


def engine_pack(folder: Path, label: str) -> Path:
    """A pack for tests/standin_engine.py: the four roles' xclbins and, for each, the
    control-code ELF its kernel runs (the one-NOOP stream sized to the 8-column partition)."""
    from harness.formats.elf_writer import control_code_elf
    from harness.formats.txn import nop_stream
    stand_in_pack(folder, label)
    for role in ("attn", "mm", "layer", "dequant"):
        (folder / f"{role}.elf").write_bytes(control_code_elf(nop_stream(8)))
    return folder


def strix_halo(base: Path, *, identity: bool = True) -> Tree:
    """A Strix Halo machine with the staging (DKMS) driver loaded, its deadline not the
    default 2000 ms (500), so a test sees that it came from the probe."""
    tree = Tree(base)
    tree.npu()
    if identity:
        tree.identity()
    tree.module({"tdr_timeout_ms": "500"}, version="2.21.0_20260101")
    return tree


def on_the_hardware_path(monkeypatch, tree: Tree, pyxrt: str = "harness.sim.pyxrt",
                         profile: str = "staging,hang-at:30") -> None:
    """This process takes `tree` for the machine and `pyxrt` for XRT's binding: the
    hardware path, played by the simulated stack's `profile` (HARNESS_SIM_PROFILE)."""
    from harness.sim import control
    monkeypatch.setenv("HARNESS_PYXRT", pyxrt)
    monkeypatch.setenv("HARNESS_ROOT", str(tree.root))
    monkeypatch.setenv("HARNESS_SIM_PROFILE", profile)
    monkeypatch.setattr(control, "_current", None)


def ar_archive(members: dict[str, bytes]) -> bytes:
    out = b"!<arch>\n"
    names = b""
    entries = []
    for name, data in members.items():
        if len(name) > 15:
            entries.append((f"/{len(names)}", data))
            names += name.encode() + b"/\n"
        else:
            entries.append((name + "/", data))
    if names:
        out += b"//".ljust(48) + str(len(names)).encode().ljust(10) + b"`\n" + names
        out += b"\n" if len(names) % 2 else b""
    for name, data in entries:
        out += name.encode().ljust(16) + b"0".ljust(32) + str(len(data)).encode().ljust(10) \
            + b"`\n" + data + (b"\n" if len(data) % 2 else b"")
    return out
