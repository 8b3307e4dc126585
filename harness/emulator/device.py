"""The emulated NPU as the system shows it: the sysfs tree and device node XRT's XDNA shim
discovers, and the driver's answers to the information ioctls.

Discovery, as XRT (`core/pcie/linux/pcidrv.cpp` scan_devices, `pcidev.cpp`) and the shim
(`src/shim/host/pcidrv_amdxdna.cpp`, `pcidrv.cpp`, `device.cpp`) read it: the entries of
/sys/bus/pci/drivers/amdxdna that are links resolving under /sys/devices/; for each,
/sys/bus/pci/devices/<BDF>/device_type (0: a KMQ device), the accel/accelN folder that
names the node /dev/accel/accelN, and vendor, device, revision, subsystem_vendor,
subsystem_device and vbnv for `xrt-smi`. The module's parameters and version are the
flavour row's (`harness.model.drivers`), with the modes the sources give them: a parameter
only root may read is unreadable here too.

The tree lives in the run folder; the preload library sends these paths there
(`redirects`). Values the firmware would report (AIE tile metadata, clocks, firmware
clocks) are the emulator's own, chosen to match the profile's device; the firmware version
is the profile's; nothing here is read from a machine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from harness.emulator import uapi
from harness.model.drivers import FLAVOURS, DriverBuild, driver_build, kernel_release
from harness.model.errors import BadInput
from harness.sim.driver_log import BDF
from harness.sim.profiles import DeviceModel, Profile

BRIDGE = "pci0000:00/0000:00:08.2"        # where the NPU function sits on Ryzen AI parts
AMD = 0x1022
DRIVER_NAME, DRIVER_DESC = b"amdxdna_accel_driver", b"AMD XDNA DRM implementation"
CORE_ROWS, MEM_ROWS, SHIM_ROWS = 4, 1, 1
COLUMN_SIZE = 1 << 25
CLOCK_MHZ = 1800
NODE_MODE = 0o660



def as_a_user_sees(mode: int) -> int:
    """A root-owned sysfs file's mode as the file this user owns must have it for the user
    to be let in as a normal user is: what the mode grants others (0444 and 0644 read,
    0400 and 0600 nothing), for owner, group and others alike."""
    return (mode & 0o007) * 0o111



@dataclass(frozen=True)
class EmulatedDevice:
    profile: Profile
    bdf: str = BDF
    minor: int = 0

    @property
    def model(self) -> DeviceModel:
        return self.profile.device_model

    @property
    def vbnv(self) -> str:
        """The driver's `default_vbnv` for the device (`npuN_regs.c`)."""
        return f"RyzenAI-{self.profile.device}"

    @property
    def node(self) -> str:
        return f"/dev/accel/accel{self.minor}"

    @property
    def device_dir(self) -> str:
        return f"/sys/devices/{BRIDGE}/{self.bdf}"

    @property
    def firmware_text(self) -> str:
        """The release the profile's firmware is (the device's own by default); a device
        answers its version, so a profile naming only a protocol cannot be emulated."""
        version = self.profile.firmware_version
        if version is None:
            raise BadInput(f"profile {self.profile.name}: an emulated device answers its "
                           "firmware's version, so give a release (firmware:1.1.2.65), not "
                           "only its protocol")
        return version

    def redirects(self) -> list[str]:
        """The paths the preload library answers from the tree."""
        return ["/sys/bus/pci/drivers/amdxdna", f"/sys/bus/pci/devices/{self.bdf}",
                self.device_dir, "/sys/class/accel", "/sys/module/amdxdna", "/dev/accel",
                "/dev/kmsg", "/proc/sys/kernel/osrelease"]

    @property
    def kernel_release(self) -> str:
        """The release of the kernel whose driver the profile plays (`kernel:7.0` is
        7.0.0): what the machine's /proc/sys/kernel/osrelease says, so that what reads
        the release (the harness's probe, and `--backend sim` playing the probed stack)
        finds the emulated kernel, not the one this machine boots."""
        major, minor, patch = kernel_release(self.profile.kernel) or (0, 0, 0)
        return f"{major}.{minor}.{patch}"

    # -- the tree -------------------------------------------------------------------------

    def write_tree(self, root: Path, kmsg: Path) -> None:
        model = self.model
        device = root / self.device_dir.lstrip("/")
        # a driver that refused the firmware at probe never bound the device: no driver
        # link, no accel node, only the PCI function and the loaded module
        bound = not self.profile.probe_refusal
        files = {
            "vendor": f"{AMD:#06x}", "device": f"{model.pci_device:#06x}",
            "revision": f"{model.revision:#04x}", "subsystem_vendor": f"{AMD:#06x}",
            "subsystem_device": f"{model.pci_device:#06x}", "class": "0x118000",
            "device_type": str(uapi.DEV_TYPE_KMQ), "vbnv": self.vbnv,
            "numa_node": "-1", "enable": "1",
            "uevent": (("DRIVER=amdxdna\n" if bound else "")
                       + f"PCI_CLASS=118000\nPCI_ID={AMD:04X}:"
                       f"{model.pci_device:04X}\nPCI_SUBSYS_ID={AMD:04X}:"
                       f"{model.pci_device:04X}\nPCI_SLOT_NAME={self.bdf}\n"
                       f"MODALIAS=pci:v0000{AMD:04X}d0000{model.pci_device:04X}\n"),
            "power/runtime_status": "active", "power/control": "auto",
        }
        if bound:
            files |= {"fw_version": self.firmware_text,
                      f"accel/accel{self.minor}/dev": f"261:{self.minor}",
                      f"accel/accel{self.minor}/uevent":
                          f"MAJOR=261\nMINOR={self.minor}\nDEVNAME=accel/accel{self.minor}\n"}
        else:
            del files["vbnv"], files["device_type"]       # the driver's own attributes
        for name, text in files.items():
            _write(device / name, text + ("" if text.endswith("\n") else "\n"))
        drivers = root / "sys/bus/pci/drivers/amdxdna"
        if bound:
            _link(device / f"accel/accel{self.minor}/device", f"../../../{self.bdf}")
            _link(device / "driver", "../../../../bus/pci/drivers/amdxdna")
            _link(drivers / self.bdf, f"../../../../devices/{BRIDGE}/{self.bdf}")
            _link(root / f"sys/class/accel/accel{self.minor}",
                  f"../../devices/{BRIDGE}/{self.bdf}/accel/accel{self.minor}")
        _link(drivers / "module", "../../../../module/amdxdna")
        for name in ("bind", "unbind", "new_id", "remove_id"):
            _write(drivers / name, "", 0o200)
        _link(root / f"sys/bus/pci/devices/{self.bdf}", f"../../../devices/{BRIDGE}/{self.bdf}")
        module = root / "sys/module/amdxdna"
        flavour = FLAVOURS[self.profile.flavour]
        build = self.build
        for name, value, mode in flavour.parameters:
            shown = value.format(force_cmdlist="Y" if build.single_cmdlist else "N",
                                 hwctx_limit=model.hwctx_limit, ctx_limit=model.ctx_limit)
            _write(module / "parameters" / name, shown + "\n", as_a_user_sees(mode))
        if flavour.module_version is not None:
            _write(module / "version", flavour.module_version + "\n")
        if bound:
            _write(root / self.node.lstrip("/"), "", NODE_MODE)
        _link(root / "dev/kmsg", os.path.relpath(kmsg, root / "dev"))
        _write(root / "proc/sys/kernel/osrelease", self.kernel_release + "\n")

    # -- the information ioctls -------------------------------------------------------------

    def aie_metadata(self) -> bytes:
        """Shim tiles in row 0, memory tiles above, core tiles on top; the shim reads the
        core row count to size a context (`num_tiles` = columns x core rows)."""
        rows = CORE_ROWS + MEM_ROWS + SHIM_ROWS
        core = (CORE_ROWS, SHIM_ROWS + MEM_ROWS, 2, 16, 128)
        mem = (MEM_ROWS, SHIM_ROWS, 6, 64, 128)
        shim = (SHIM_ROWS, 0, 2, 16, 128)
        return uapi.AIE_METADATA.pack(COLUMN_SIZE, self.model.columns, rows, 2, 0,
                                      *core, *mem, *shim)

    def firmware_version(self) -> bytes:
        return uapi.FIRMWARE_VERSION.pack(*(int(part) for part in self.firmware_text.split(".")))

    def clocks(self) -> bytes:
        return uapi.CLOCK.pack(b"MP-NPU Clock", CLOCK_MHZ, 0) + \
            uapi.CLOCK.pack(b"H Clock", CLOCK_MHZ, 0)

    def resources(self) -> bytes:
        return uapi.RESOURCE_INFO.pack(CLOCK_MHZ, 50, self.model.hwctx_limit, 0, 0)

    @property
    def build(self) -> DriverBuild:
        return driver_build(self.profile.flavour, self.profile.kernel)

    def version(self) -> tuple[tuple[int, int, int], bytes, bytes, bytes]:
        """DRM_IOCTL_VERSION: the flavour's own version for its kernel (staging 0.16,
        mainline by release as `mainline_drm_version` gives it, the legacy tree 1.0),
        which FastFlowLM gates on; the name and description are the same in every tree."""
        major, minor = self.build.drm_version
        return (major, minor, 0), DRIVER_NAME, b"", DRIVER_DESC


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.chmod(path, mode)


def _link(path: Path, target: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)
