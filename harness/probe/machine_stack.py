"""This machine's stack as the simulator's profile tokens: the loaded driver's flavour, the
kernel release, the NPU and its firmware, so that `--backend sim` on a machine with an NPU
plays that machine's stack rather than the simulator's default (what its run is compared
with)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.model.drivers import FLAVOURS, kernel_release
from harness.probe.driver import driver_facts
from harness.probe.npu import generation, nodes
from harness.probe.readers import Sources

# the device tokens the simulator takes, by the generation the probe names
DEVICE_TOKENS = {"NPU1 Phoenix": "npu1", "NPU4 Strix": "npu4", "NPU5 Strix Halo": "npu5",
                 "NPU6 Krackan": "npu6"}


@dataclass(frozen=True)
class ProbedStack:
    """Profile tokens for what was probed, and what could not be (each with why)."""

    tokens: tuple[str, ...]
    unknown: tuple[str, ...]

    def text(self) -> str:
        found = ",".join(self.tokens) or "nothing"
        return found + (f" (not probed: {'; '.join(self.unknown)})" if self.unknown else "")


def probed_stack(src: Sources) -> ProbedStack | None:
    """None without an NPU node; else the flavour, kernel and device tokens probed."""
    if not nodes(src):
        return None
    tokens, unknown = [], []
    osrelease = (src.read("/proc/sys/kernel/osrelease") or "").strip()
    driver = driver_facts(src, osrelease or None)
    if driver.get("flavour") in FLAVOURS:
        tokens.append(str(driver["flavour"]))
    else:
        unknown.append(f"driver flavour ({driver.get('timeout_rule')})")
    numbers = re.match(r"\d+\.\d+(?:\.\d+)?", osrelease)
    if numbers and kernel_release(numbers.group(0)) is not None:
        tokens.append(f"kernel:{numbers.group(0)}")
    else:
        unknown.append(f"kernel {osrelease or 'unreadable'} (a series the simulator does "
                       "not model)")
    device_dir = f"/sys/class/accel/{nodes(src)[0]['path'].rsplit('/', 1)[1]}/device"
    name = generation(_hex(src.read(f"{device_dir}/device")),
                      _hex(src.read(f"{device_dir}/revision")))
    if name in DEVICE_TOKENS:
        tokens.append(f"device:{DEVICE_TOKENS[name]}")
    else:
        unknown.append("NPU generation")
    firmware = (src.read(f"{device_dir}/fw_version") or "").strip()
    if re.fullmatch(r"\d+(\.\d+){3}", firmware):
        tokens.append(f"firmware:{firmware}")
    else:
        unknown.append(f"firmware ({firmware or 'unreadable'})")
    return ProbedStack(tuple(tokens), tuple(unknown))


def _hex(text: str | None) -> int | None:
    try:
        return int(text or "", 16)
    except ValueError:
        return None
