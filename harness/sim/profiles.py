"""Profiles: which stack the simulator plays.

A profile is comma-separated tokens, e.g. ``staging``, ``mainline,hang-at:3``
or ``inflight-cap:40,flaky:0.1,seed:7``. One token picks the driver flavour
(``staging`` is the default), one may pick the device, the rest are labelled
hypotheses (deviations from the documented stack) or modes. The documented
profile is the null model: if hardware disagrees with it, a report has found
something.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from harness.model.drivers import DEFAULT_KERNEL, KERNELS, driver_build
from harness.model.drivers import FLAVOURS as DRIVER_FLAVOURS
from harness.model.errors import BadInput
from harness.sim.releases import NEWEST, RELEASES, XrtRelease

FLAVOURS = tuple(DRIVER_FLAVOURS)


@dataclass(frozen=True)
class DeviceModel:
    name: str
    pci_device: int
    revision: int
    columns: int
    dev_gen: int
    hwctx_limit: int             # hwctx_limit in the driver's npuN_regs.c

    @property
    def npu4_class(self) -> bool:
        # STACK.md 4: on PCI 17f0 devices the firmware leaves error_index at 0 on timeouts.
        return self.pci_device == 0x17F0


DEVICES = {
    "npu1": DeviceModel("NPU1 Phoenix", 0x1502, 0x00, 4, 3, 6),
    "npu4": DeviceModel("NPU4 Strix", 0x17F0, 0x10, 8, 4, 16),
    "npu5": DeviceModel("NPU5 Strix Halo", 0x17F0, 0x11, 8, 4, 16),
    "npu6": DeviceModel("NPU6 Krackan", 0x17F0, 0x20, 8, 4, 16),
}


@dataclass(frozen=True)
class TokenDoc:
    syntax: str
    kind: str          # documented | deviation | device | mode
    assumes: str
    source: str


CATALOGUE = (
    TokenDoc("staging", "documented",
             "DKMS amdxdna.ko: " + DRIVER_FLAVOURS["staging"].rule,
             driver_build("staging").source),
    TokenDoc("mainline", "documented", "in-tree amdxdna: " + DRIVER_FLAVOURS["mainline"].rule,
             driver_build("mainline").source),
    TokenDoc("oot", "documented",
             "out-of-tree amdxdna_legacy.ko: " + DRIVER_FLAVOURS["oot"].rule
             + "; chains capped at 64 commands",
             driver_build("oot").source),
    TokenDoc("kernel:" + "|".join(KERNELS), "kernel",
             f"which Linux the driver runs on (default {DEFAULT_KERNEL}, the #712 machine's): "
             "mainline ends a hung job ABORT before 6.17 (a cancelled single run stays NEW), "
             "TIMEOUT from 6.17.y, fills failed payloads with 0xFF from 7.0 and prints the "
             "capture block from 7.1; staging checks a device-wide stamp from 6.17 and runs "
             "its legacy device check before",
             "Linux 6fb7f2988832, 89ff45359abb, 25854131c04a; xdna-driver "
             "HAVE_6_17_drm_gpu_sched_stat_no_hang"),
    TokenDoc("device:npu1|npu4|npu5|npu6", "device",
             "which NPU (default npu5, Strix Halo, 8 columns); PCI 17f0 devices leave "
             "error_index at 0 on timeouts, npu1 (Phoenix, 4 columns) reports it",
             "STACK.md 4; xdna-driver test/shim_test/io_test.cpp"),
    TokenDoc("xrt:RELEASE", "release",
             f"which XRT release answers, one of {', '.join(RELEASES)} (default {NEWEST}): "
             "the runlist failure message names the state from 2.21.75 on, not in 2.20 and "
             "tag 202610.2.21.21; the binding has that release's classes and overloads",
             "Xilinx/XRT xrt_kernel.cpp runlist_impl::throw_command_error (PR #9408) and "
             "src/python/pybind11/src/pyxrt.cpp at each tag"),
    TokenDoc("inflight-cap:N", "deviation",
             "the firmware wedges when more than N sub-commands are queued on one context "
             "(the hypothesis behind the 42-layer timeout)",
             "hypothesis from ROCm/FastFlowLM#712, not a documented limit"),
    TokenDoc("xrt-chain:N", "deviation",
             "an XRT whose runlist submit size is N instead of the hard-wired 24",
             "hypothesis; XRT runlist_impl::submit_size = 24 since 2024"),
    TokenDoc("hang-at:K", "deviation",
             "the run at position K (0-based) of every runlist never completes",
             "hypothesis: a kernel that hangs the array"),
    TokenDoc("slow:KERNEL:US", "deviation",
             "every command of KERNEL (kernel name, xclbin file stem such as layer, or "
             "stem/kernel) takes US microseconds",
             "hypothesis: a slow kernel tripping the driver's timeout"),
    TokenDoc("flaky:P", "deviation",
             "each submitted job hangs at a random command with probability P, reproducibly "
             "per seed",
             "hypothesis: intermittent firmware hangs"),
    TokenDoc("seed:S", "mode", "the random seed for flaky:P (trials derive their own from it)",
             "harness"),
    TokenDoc("realtime", "mode",
             "simulated time passes in real time: waits really block (for isolation tests)",
             "harness"),
)


@dataclass(frozen=True)
class Profile:
    flavour: str = "staging"
    device: str = "npu5"
    kernel: str = DEFAULT_KERNEL
    inflight_cap: int | None = None
    xrt_chain: int = 24
    hang_at: tuple[int, ...] = ()
    slow: tuple[tuple[str, float], ...] = ()
    flaky: float = 0.0
    seed: int = 0
    realtime: bool = False
    xrt: str = NEWEST

    @property
    def device_model(self) -> DeviceModel:
        return DEVICES[self.device]

    @property
    def release(self) -> XrtRelease:
        return RELEASES[self.xrt]

    @property
    def deviations(self) -> list[str]:
        """The hypothesis tokens: what this profile assumes beyond the documented stack."""
        out = []
        if self.inflight_cap is not None:
            out.append(f"inflight-cap:{self.inflight_cap}")
        if self.xrt_chain != 24:
            out.append(f"xrt-chain:{self.xrt_chain}")
        out += [f"hang-at:{k}" for k in self.hang_at]
        out += [f"slow:{kernel}:{_num(us)}" for kernel, us in self.slow]
        if self.flaky:
            out.append(f"flaky:{_num(self.flaky)}")
        return out

    @property
    def documented(self) -> bool:
        return not self.deviations

    @property
    def name(self) -> str:
        """Canonical text, e.g. ``staging,inflight-cap:40`` (parses back to this profile)."""
        tokens = [self.flavour]
        if self.kernel != DEFAULT_KERNEL:
            tokens.append(f"kernel:{self.kernel}")
        if self.device != "npu5":
            tokens.append(f"device:{self.device}")
        if self.xrt != NEWEST:
            tokens.append(f"xrt:{self.xrt}")
        tokens += self.deviations
        if self.seed:
            tokens.append(f"seed:{self.seed}")
        if self.realtime:
            tokens.append("realtime")
        return ",".join(tokens)

    def with_seed(self, seed: int) -> Profile:
        return replace(self, seed=seed)

    def with_realtime(self, realtime: bool = True) -> Profile:
        return replace(self, realtime=realtime)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


_INT = re.compile(r"[0-9]+", re.ASCII)
MAX_COUNT = 2**31 - 1          # counts and run indices: a C int, as XRT keeps them
MAX_SEED = 2**64 - 1


def parse_profile(text: str | None) -> Profile:
    """Parse a profile string; errors name the token and list what is allowed."""
    if text is None or not text.strip():
        return Profile()
    values: dict = {"hang_at": [], "slow": []}
    seen: set[str] = set()
    for raw in text.split(","):
        token = raw.strip()
        if not token:
            continue
        head, _, rest = token.partition(":")
        if head in ("device", "kernel", "xrt", "inflight-cap", "xrt-chain", "seed", "flaky",
                    "realtime"):
            if head in seen:
                raise BadInput(f"profile {text!r} gives {head} twice; give it once")
            seen.add(head)
        if token in FLAVOURS:
            if "flavour" in values:
                raise BadInput(f"profile {text!r} names two driver flavours "
                               f"({values['flavour']}, {token}); pick one")
            values["flavour"] = token
        elif token == "realtime":
            values["realtime"] = True
        elif head == "device" and rest in DEVICES:
            values["device"] = rest
        elif head == "kernel" and rest in KERNELS:
            values["kernel"] = rest
        elif head == "xrt" and rest in RELEASES:
            values["xrt"] = rest
        elif head == "inflight-cap" and _INT.fullmatch(rest):
            values["inflight_cap"] = _positive(token, rest)
        elif head == "xrt-chain" and _INT.fullmatch(rest):
            values["xrt_chain"] = _positive(token, rest)
        elif head == "hang-at" and _INT.fullmatch(rest):
            values["hang_at"].append(_bounded(token, rest, MAX_COUNT))
        elif head == "seed" and _INT.fullmatch(rest):
            values["seed"] = _bounded(token, rest, MAX_SEED)
        elif head == "flaky":
            values["flaky"] = _probability(token, rest)
        elif head == "slow" and rest.count(":") >= 1:
            kernel, _, us = rest.rpartition(":")
            try:
                latency = float(us)
            except ValueError:
                latency = -1.0
            if not kernel or not math.isfinite(latency) or latency <= 0:
                raise BadInput(f"profile token {token!r}: use slow:KERNEL:US with US > 0 "
                               "microseconds, e.g. slow:layer:3000000")
            values["slow"].append((kernel, latency))
        else:
            allowed = ", ".join(doc.syntax for doc in CATALOGUE)
            raise BadInput(f"unknown profile token {token!r} in {text!r}; allowed: {allowed} "
                           "(see `runlist-harness sim profiles`)")
    values["hang_at"] = tuple(sorted(set(values["hang_at"])))
    values["slow"] = tuple(values["slow"])
    return Profile(**values)


def _positive(token: str, digits: str) -> int:
    value = _bounded(token, digits, MAX_COUNT)
    if value < 1:
        raise BadInput(f"profile token {token!r}: N must be >= 1")
    return value


def _bounded(token: str, digits: str, limit: int) -> int:
    """A token's number, read only once it is short enough to be one the harness can use
    (int() refuses 4,300 digits; nothing here counts past a C int or seeds past 64 bits)."""
    if len(digits) > len(str(limit)) or int(digits) > limit:
        shown = token if len(token) <= 40 else f"{token[:24]}... ({len(digits):,} digits)"
        raise BadInput(f"profile token {shown!r}: the number is past {limit:,}, the most "
                       "the harness can use there")
    return int(digits)


def _probability(token: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise BadInput(f"profile token {token!r}: P must be a probability between 0 and 1")
    return value
