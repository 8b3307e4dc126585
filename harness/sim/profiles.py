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
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

from harness.model import firmware
from harness.model.drivers import (
    CHANGES,
    DEFAULT_FLAVOUR,
    DEFAULT_KERNEL,
    FLAVOURS,
    JOBS_IN_FLIGHT,
    KERNELS,
    Printed,
    driver_build,
    kernel_release,
)
from harness.model.errors import BadInput
from harness.model.firmware import Protocol
from harness.model.wedge import WEDGE_SOURCES
from harness.sim.device_life import HANGS, REFUSES
from harness.sim.releases import DEFAULT as DEFAULT_XRT
from harness.sim.releases import RELEASES, XrtRelease


@dataclass(frozen=True)
class DeviceModel:
    """An NPU the simulator plays: its PCI ids, columns, device generation and context
    limits."""

    name: str
    pci_device: int
    revision: int
    columns: int
    dev_gen: int
    hwctx_limit: int             # hwctx_limit in the driver's npuN_regs.c
    ctx_limit: int               # the legacy tree's virtual contexts (ctx_limit, npuN_regs.c)

    @property
    def npu4_class(self) -> bool:
        # PCI 17f0: npu4/5/6 share npu4's firmware feature table (AIE2_PREEMPT,
        # AIE2_APP_HEALTH)
        return self.pci_device == 0x17F0


DEVICES = {
    "npu1": DeviceModel("NPU1 Phoenix", 0x1502, 0x00, 4, 3, 6, 6),
    "npu4": DeviceModel("NPU4 Strix", 0x17F0, 0x10, 8, 4, 16, 32),
    "npu5": DeviceModel("NPU5 Strix Halo", 0x17F0, 0x11, 8, 4, 16, 32),
    "npu6": DeviceModel("NPU6 Krackan", 0x17F0, 0x20, 8, 4, 16, 32),
}
PROTOCOL_TOKEN = "protocol:"
FIRMWARE_TAKEN = "firmware-taken"
# What the empty profile plays, in words (`sim profiles`, the commands' --profile help)
DEFAULT_STACK = (
    "mainline, the ROCm/FastFlowLM#712 machine's stack as documented: Linux 7.0 with its "
    "in-tree amdxdna (drm_sched's 60 s timer; a timeout prints nothing to the kernel log, "
    "only the trace event \"job timedout\"), a Ryzen AI Max+ 395 (npu5, Strix Halo) with "
    "firmware 1.1.2.65 (mailbox protocol 7.2, accepted from 7.0 by f1eac46fe5f7), and XRT "
    "2.26.0 installed (FastFlowLM loads its bundled 2.21.75: xrt:2.21). The machine "
    "reported the driver as 0.7; kernel.org's 7.0 says 0.6 (a distribution kernel may "
    "carry more), and the simulator plays kernel.org's 7.0")


@dataclass(frozen=True)
class TokenDoc:
    """A profile token, for `sim profiles`: its syntax, kind, what it assumes, and where
    that was read."""

    syntax: str
    kind: str          # documented | deviation | device | mode
    assumes: str
    source: str


def catalogue() -> tuple[TokenDoc, ...]:
    """Every profile token: a driver flavour's, each from its row, the stack's, each
    hypothesis's from its entry, then the modes."""
    flavours = tuple(
        TokenDoc(row.name, "documented", f"{row.title}: {row.rule}" + (
            f"; chains capped at {row.chain_cap} commands" if row.chain_cap else ""),
            driver_build(row.name).source)
        for row in FLAVOURS.values())
    hypotheses = tuple(
        TokenDoc(f"{entry.head}:{entry.param}", "deviation", entry.assumes + (
            f"; diagnosis: {entry.cause}" if entry.cause else ""),
            f"{entry.source}; played by {entry.played}")
        for entry in HYPOTHESES.values())
    return flavours + STACK_TOKENS + hypotheses + MODE_TOKENS


# the tokens that pick the stack, besides the flavours'
STACK_TOKENS = (
    TokenDoc("kernel:RELEASE", "kernel",
             f"which Linux release the driver runs on, a series of {', '.join(KERNELS)} "
             f"(its first release) or a point release such as 6.18.3 (default "
             f"{DEFAULT_KERNEL}, the #712 machine's): mainline before 7.0 (f1eac46fe5f7) "
             "takes only its device's one firmware protocol (6.12 or later on npu4/5/6) and "
             "refuses protocol-7 firmware such as 1.1.2.64/65 at probe, leaving no "
             "/dev/accel node (give firmware:1.0.0.63 or firmware:protocol:6.x to play its "
             "other rules); mainline ends a hung job ABORT until "
             "6fb7f2988832 (6.19; backported to 6.17.13 and 6.18.2: 6.17.0 and 6.18.0 give "
             "ABORT), fills failed payloads with 0xFF from 89ff45359abb (7.0; 6.19.7), and "
             "from 7.1 asks the firmware's app health (capture block, run_list_id, version-1 "
             "health in XRT's message); staging checks a device-wide stamp from 6.17 and "
             "runs its legacy device check before",
             "; ".join(f"Linux {c.commit}: {c.source}" for c in CHANGES)
             + "; xdna-driver HAVE_6_17_drm_gpu_sched_stat_no_hang; the device's protocol "
             "before f1eac46fe5f7: " + firmware.SINGLE_PROTOCOL_SOURCE),
    TokenDoc("device:npu1|npu4|npu5|npu6", "device",
             "which NPU (default npu5, Strix Halo, 8 columns); npu1 (Phoenix) has 4 columns, "
             "6 contexts and no app health at any firmware",
             "xdna-driver npu1_regs.c, npu4_regs.c"),
    TokenDoc("firmware:VERSION|firmware:protocol:M.N|M.x", "firmware",
             "which NPU firmware runs (default the device's: 1.1.2.65 on npu5, 1.1.2.64 on "
             "npu4 and npu6, 1.5.5.391 on npu1), a release whose mailbox protocol public "
             f"logs establish ({', '.join(firmware.RELEASES)}) or the protocol itself (M.x: "
             "only the major known, allowed where the driver never asks for app health): "
             + firmware.APP_HEALTH_RULE + "; without it the driver logs no capture block "
             "and writes no health data, and the report says " + repr(firmware.NO_HEALTH),
             "xdna-driver npu4_regs.c npu4_fw_feature_table, src/driver/amdxdna/npu4_regs.c; "
             + "; ".join(f"{r.version}: {r.source}" for r in firmware.RELEASES.values())),
    TokenDoc("firmware-taken", "machine",
             "the driver took the firmware at probe, as a machine's working /dev/accel node "
             "shows: kernel.org mainline before 7.0's one-protocol check is played as passed "
             "(a distribution kernel carrying f1eac46fe5f7 takes protocol-7 firmware); "
             "`--backend sim` on a machine adds it where the probed kernel and firmware would "
             "otherwise be refused, and says so",
             "the machine's probe (its /dev/accel node); Linux f1eac46fe5f7 (7.0): "
             + firmware.SINGLE_PROTOCOL_SOURCE),
    TokenDoc("xrt:RELEASE", "release",
             f"which XRT release answers, one of {', '.join(RELEASES)} (default "
             f"{DEFAULT_XRT}, the #712 machine's): "
             "the runlist failure message names the state from 2.21.75 on, not in 2.20 and "
             "tag 202610.2.21.21; the binding has that release's classes and overloads",
             "Xilinx/XRT xrt_kernel.cpp runlist_impl::throw_command_error (PR #9408) and "
             "src/python/pybind11/src/pyxrt.cpp at each tag"),
)
MODE_TOKENS = (
    TokenDoc("seed:S", "mode", "the random seed for flaky:P (trials derive their own from it)",
             "harness"),
    TokenDoc("realtime", "mode",
             "simulated time passes in real time: waits really block (for isolation tests)",
             "harness"),
)


@dataclass(frozen=True)
class Profile:
    """A simulated stack: the driver flavour, device, kernel, XRT release and firmware it
    plays, and the hypotheses and faults the profile's tokens add."""

    flavour: str = DEFAULT_FLAVOUR
    device: str = "npu5"
    kernel: str = DEFAULT_KERNEL
    inflight_cap: int | None = None
    xrt_chain: int = 24
    hang_at: tuple[int, ...] = ()
    work_hang: int | None = None
    reject_at: tuple[int, ...] = ()
    slow: tuple[tuple[str, float], ...] = ()
    flaky: float = 0.0
    held_contexts: int = 0
    serve_fault: str | None = None
    wedge: tuple[int, str, bool] | None = None     # (N, what the firmware does, reloads)
    firmware_dead: int | None = None
    seed: int = 0
    realtime: bool = False
    xrt: str = DEFAULT_XRT
    firmware: str | None = None   # a release, or protocol:M.N; None: the device's own
    firmware_taken: bool = False  # a machine's working node shows its driver took it

    @property
    def device_model(self) -> DeviceModel:
        return DEVICES[self.device]

    @property
    def firmware_version(self) -> str | None:
        """The firmware release (None when the profile gives only its protocol)."""
        if self.firmware is None:
            return firmware.DEVICE_FIRMWARE[self.device]
        return None if self.firmware.startswith(PROTOCOL_TOKEN) else self.firmware

    @property
    def protocol(self) -> Protocol | None:
        if self.firmware is not None and self.firmware.startswith(PROTOCOL_TOKEN):
            return firmware.parse_protocol(self.firmware[len(PROTOCOL_TOKEN):])
        return firmware.protocol_of(self.firmware_version)

    @property
    def app_health(self) -> bool | None:
        """Whether the firmware answers the driver's app health query; None when its
        protocol does not settle it, which parse_profile allows only where the driver
        never asks (kernel.org mainline before 25854131c04a)."""
        return firmware.has_app_health(self.device_model.npu4_class, self.protocol)

    @property
    def probe_refusal(self) -> tuple[Printed, ...]:
        """The lines the driver prints refusing this firmware at probe (no /dev/accel
        node then); empty when it takes it, or when a machine showed that it does
        (`firmware-taken`)."""
        if self.firmware_taken:
            return ()
        return driver_build(self.flavour, self.kernel).refuses_firmware(
            self.device_model.npu4_class, self.protocol)

    def firmware_facts(self) -> dict[str, object]:
        """The simulated firmware as a report records it."""
        protocol = self.protocol
        health = self.app_health
        out: dict[str, object] = {"version": self.firmware_version,
                                  "protocol": protocol.text if protocol else None,
                                  "app_health": health}
        if health is False:
            out["note"] = f"{firmware.NO_HEALTH} ({firmware.APP_HEALTH_RULE})"
        elif health is None:
            out["note"] = ("whether this firmware reports health is not settled by its "
                           "protocol; the driver played never asks for it")
        return out

    @property
    def release(self) -> XrtRelease:
        return RELEASES[self.xrt]

    @property
    def deviations(self) -> list[str]:
        """The hypothesis tokens: what this profile assumes beyond the documented stack."""
        return [token for entry in HYPOTHESES.values()
                for token in entry.tokens(getattr(self, entry.field))]

    @property
    def documented(self) -> bool:
        return not self.deviations

    @property
    def by_construction(self) -> list[str]:
        """What each hypothesis makes happen, whatever the case: a simulated outcome that
        follows from them says so instead of passing for a finding."""
        return [text for entry in HYPOTHESES.values()
                for text in entry.consequences(getattr(self, entry.field))]

    @property
    def name(self) -> str:
        """Canonical text, e.g. ``staging,inflight-cap:40`` (parses back to this profile)."""
        tokens = [self.flavour]
        if self.kernel != DEFAULT_KERNEL:
            tokens.append(f"kernel:{self.kernel}")
        if self.device != "npu5":
            tokens.append(f"device:{self.device}")
        if self.xrt != DEFAULT_XRT:
            tokens.append(f"xrt:{self.xrt}")
        if self.firmware is not None:
            tokens.append(f"firmware:{self.firmware}")
        if self.firmware_taken:
            tokens.append(FIRMWARE_TAKEN)
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

    def documented_base(self) -> Profile:
        """The documented stack this profile deviates from: the same driver, kernel,
        device, XRT and firmware, no hypothesis, no seed, on the virtual clock."""
        plain = Profile()
        return replace(self, seed=0, realtime=False,
                       **{entry.field: getattr(plain, entry.field)
                          for entry in HYPOTHESES.values()})


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


# compiled on first use, by re's own cache: a start-up does not pay for it
_INT = r"(?a)[0-9]+"
MAX_COUNT = 2**31 - 1          # counts and run indices: a C int, as XRT keeps them
MAX_SEED = 2**64 - 1


@dataclass(frozen=True)
class Hypothesis:
    """A profile's hypothesis, one entry: its token (`head`:`param`), the `Profile` field
    that holds it, how its parameter is read (`read(token, parameter)`, a BadInput naming
    the token on a bad one), what it assumes and where that comes from, what it makes happen
    whatever the case (`makes`, one value), where the simulator and the emulator play it,
    and the diagnosis cause (harness.report.diagnosis) that names it, where one does.
    `many`: the token may be given more than once, the field then holding a tuple."""

    head: str
    param: str
    field: str
    read: Callable[[str, str], Any]
    assumes: str
    source: str
    makes: Callable[[Any], str]
    played: str
    cause: str | None = None
    many: bool = False
    shown: Callable[[Any], str] = str

    def tokens(self, value: Any) -> list[str]:
        """The tokens that give `value` (none for the field's default: not assumed)."""
        if value == _default(self.field):
            return []
        return [f"{self.head}:{self.shown(one)}" for one in (value if self.many else (value,))]

    def consequences(self, value: Any) -> list[str]:
        if value == _default(self.field):
            return []
        return [self.makes(one) for one in (value if self.many else (value,))]


def _default(name: str) -> Any:
    return next(item.default for item in fields(Profile) if item.name == name)


def _count(token: str, parameter: str) -> int:
    if not re.fullmatch(_INT, parameter):
        raise _not_whole(token, 0)
    return _bounded(token, parameter, MAX_COUNT)


def _at_least_one(token: str, parameter: str) -> int:
    if not re.fullmatch(_INT, parameter):
        raise _not_whole(token, 1)
    return _positive(token, parameter)


def _not_whole(token: str, least: int) -> BadInput:
    head = token.partition(":")[0]
    return BadInput(f"profile token {token!r}: {head} takes a whole number of {least} or "
                    f"more, e.g. {head}:3")


def _slow(token: str, parameter: str) -> tuple[str, float]:
    kernel, _, us = parameter.rpartition(":")
    try:
        latency = float(us)
    except ValueError:
        latency = -1.0
    if not kernel or not math.isfinite(latency) or latency <= 0:
        raise BadInput(f"profile token {token!r}: use slow:KERNEL:US with US > 0 "
                       "microseconds, e.g. slow:layer:3000000")
    return kernel, latency


def _inflight_cap(n: int) -> str:
    return (f"inflight-cap:{n} makes every runlist of more than {n} commands fail (the "
            f"firmware wedges with more than {n} queued on one context)")


def _held_contexts(n: int) -> str:
    return (f"held-contexts:{n} leaves the device {n} fewer contexts: a run whose contexts "
            f"do not fit in what is left is refused one at set-up, before any runlist runs")


def _serve_fault(token: str, parameter: str) -> str:
    if parameter not in SERVE_FAULTS:
        raise BadInput(f"profile token {token!r}: use serve-fault:KIND with KIND one of "
                       f"{', '.join(SERVE_FAULTS)}, e.g. serve-fault:error")
    return parameter


def _serve_fault_makes(kind: str) -> str:
    what = ("answer an error with no XRT state" if kind == "error"
            else "drop the connection without an answer")
    return (f"serve-fault:{kind} makes the stand-in flm serve {what} on every chat request, "
            "before any NPU call; runlists through pyxrt are untouched")


def _work_hang(n: int) -> str:
    return (f"work-hang:{n} makes every runlist holding {n} or more runs that carry work fail "
            f"(the {_ordinal(n)} of them never completes); NOOP runs never hang")


def _wedge(token: str, parameter: str) -> tuple[int, str, bool]:
    count, _, plays = parameter.partition(":")
    n = _at_least_one(token, count)
    mode, reloads = REFUSES, False
    for word in plays.split("+") if plays else ():
        if word in WEDGE_WORDS:
            mode = WEDGE_WORDS[word]
        elif word == "reloads":
            reloads = True
        else:
            raise BadInput(f"profile token {token!r}: use wedge:N or wedge:N:PLAYS, PLAYS "
                           f"'+'-joined from {', '.join(WEDGE_WORDS)} (what the firmware "
                           "does) and reloads (a module reload or a PCI rescan clears it), "
                           "e.g. "
                           "wedge:1:hang+reloads")
    return n, mode, reloads


def _wedge_shown(value: tuple[int, str, bool]) -> str:
    n, mode, reloads = value
    words = ([] if mode == REFUSES else [next(w for w, m in WEDGE_WORDS.items() if m == mode)]) \
        + (["reloads"] if reloads else [])
    return f"{n}" + (":" + "+".join(words) if words else "")


def _wedge_makes(value: tuple[int, str, bool]) -> str:
    n, mode, reloads = value
    what = "refuse every context" if mode == REFUSES else "complete no command"
    return (f"wedge:{_wedge_shown(value)} makes the firmware {what} from the driver's "
            f"{_ordinal(n)} timeout on: every later runlist and context fails, whatever its "
            "depth or cut, and is marked as run on a wedged device; a module reload "
            + ("clears it" if reloads else "goes through and leaves it wedged: only a reboot "
               "clears it"))


def _firmware_dead(n: int) -> str:
    return (f"firmware-dead:{n} makes the firmware stop answering at the driver's "
            f"{_ordinal(n)} timeout: staging power-cycles the NPU (aie2_hw_reset) and later "
            "runs work again; a tree without that path keeps a dead device")


_SIM = "harness.sim"
WEDGE_WORDS = {"refuse": REFUSES, "hang": HANGS}
SERVE_FAULTS = ("error", "drop")   # how the stand-in flm serve fails (sim.stand_in_server)
HYPOTHESES: dict[str, Hypothesis] = {entry.head: entry for entry in (
    Hypothesis(
        "inflight-cap", "N", "inflight_cap", _at_least_one,
        "the firmware wedges when more than N sub-commands are queued on one context (the "
        "hypothesis behind the 42-layer timeout); N below 96 (4 jobs in flight of 24 "
        "commands, or 4 x xrt-chain), as no more are ever queued",
        "hypothesis from ROCm/FastFlowLM#712, not a documented limit; the bound: "
        "xdna-driver CTX_MAX_CMDS / HWCTX_MAX_CMDS, XRT runlist_impl::submit_size",
        _inflight_cap, f"{_SIM}.stack (the firmware's queue), the emulator through it",
        cause="depth-limit"),
    Hypothesis(
        "xrt-chain", "N", "xrt_chain", _at_least_one,
        "an XRT whose runlist submit size is N instead of the hard-wired 24",
        "hypothesis; XRT runlist_impl::submit_size = 24 since 2024",
        lambda n: f"xrt-chain:{n} makes XRT cut runlists into chains of {n} instead of 24",
        f"{_SIM}.runs (the binding's runlist), harness.emulator.emulated_driver (chain "
        "starts)"),
    Hypothesis(
        "hang-at", "K", "hang_at", _count,
        "the run at position K (0-based) of every runlist never completes",
        "hypothesis: a kernel that hangs the array",
        lambda k: f"hang-at:{k} makes every runlist deeper than {k} fail (its run {k}, "
                  "0-based, never completes)",
        f"{_SIM}.runs (the firmware's chain), harness.emulator.emulated_driver",
        many=True),
    Hypothesis(
        "work-hang", "N", "work_hang", _at_least_one,
        "in every runlist, the Nth run (counted from 1) whose control code carries work "
        "never completes: N-1 such runs complete, the Nth hangs until the driver's timer "
        "fires; runs of the one-NOOP stream never hang and are not counted, so NOOP "
        "runlists of any depth complete and runlists holding fewer than N runs of work "
        "complete (single runs started by themselves too)",
        "hypothesis: a kernel's lock or semaphore that overflows after N runs in one "
        "runlist (a 6-bit lock counter hung the 8th run, 7 completed), or a deadlock in "
        "the work (Xilinx/mlir-air#1984)",
        _work_hang, f"{_SIM}.runs (counts runs of work), harness.emulator.emulated_driver",
        cause="work-hang"),
    Hypothesis(
        "reject-at", "N", "reject_at", _count,
        "the firmware fails the run at position N (0-based) of every runlist deeper than "
        "N at once, whatever it carries: its chain ends ERROR with error_index at that "
        "run, so XRT names it, and the runs after it are ABORT; nothing waits for a "
        "timer",
        "hypothesis: a firmware that refuses a command it cannot run (an error that "
        "names its run, as ERT_CMD_STATE_ERROR with error_index does)",
        lambda n: f"reject-at:{n} makes every runlist deeper than {n} fail at once (the "
                  f"firmware fails its run {n}, 0-based, with an error naming it)",
        f"{_SIM}.runs and {_SIM}.stack (the firmware's note), "
        "harness.emulator.emulated_driver", cause="refused", many=True),
    Hypothesis(
        "slow", "KERNEL:US", "slow", _slow,
        "every command of KERNEL (kernel name, xclbin file stem such as layer, or "
        "stem/kernel) takes US microseconds; a chain whose commands add up to more than "
        "the driver's timer ends TIMEOUT at the timer (drm_sched's timer runs from the "
        "chain's push or the last completion; a chain is one job), while a cut into "
        "shorter chains completes",
        "hypothesis: a slow kernel tripping the driver's timeout",
        lambda slow: f"slow:{slow[0]}:{_num(slow[1])} makes each {slow[0]} command take "
                     f"{_num(slow[1])} us, so a chain that runs past the driver's timeout "
                     "fails",
        f"{_SIM}.stack (command latencies), the emulator through it", cause="slow-work",
        many=True, shown=lambda slow: f"{slow[0]}:{_num(slow[1])}"),
    Hypothesis(
        "flaky", "P", "flaky", lambda token, parameter: _probability(token, parameter),
        "each submitted job hangs at a random command with probability P, reproducibly "
        "per seed",
        "hypothesis: intermittent firmware hangs",
        lambda p: f"flaky:{_num(p)} makes each job hang with probability {_num(p)}",
        f"{_SIM}.stack (per job, from the trial's seed), the emulator through it",
        cause="nondeterministic", shown=_num),
    Hypothesis(
        "held-contexts", "N", "held_contexts", _count,
        "other processes hold N contexts on the device for the whole run (a second "
        "FastFlowLM server, a program that leaked its contexts), so the run's own contexts "
        "meet the device's limit after N: the out-of-tree driver's virtual contexts "
        "(context_limit, 32; 6 on npu1) or the firmware's hardware contexts (hwctx_limit, "
        "16; 6 on npu1) count every process's",
        "hypothesis: another holder of the NPU; the limits are the driver's (out-of-tree "
        "aie2_ctx_runqueue.c aie2_rq_add counts rq->ctx_cnt over the device; the firmware "
        "refuses past hwctx_limit whoever asks)",
        _held_contexts, f"{_SIM}.stack (create_context), the emulator through it",
        cause="contention"),
    Hypothesis(
        "serve-fault", "KIND", "serve_fault", _serve_fault,
        "the server fails a request outside the NPU path, before any NPU call: KIND error "
        "answers {\"error\": ...} with no XRT state (a template, tokenizer or load "
        "error), KIND drop closes the connection (a server that died mid-request); played "
        "by the stand-in flm serve that investigate asks on the simulated stack",
        "hypothesis: a failure of the server, not of the NPU path (FastFlowLM answers "
        "errors as {\"error\": ...} with HTTP 200, STACK.md 5)",
        _serve_fault_makes, f"{_SIM}.stand_in_server (the stand-in flm serve); nothing "
        "below it",
        cause="not-npu-path"),
    Hypothesis(
        "wedge", "N[:PLAYS]", "wedge", _wedge,
        "from the driver's Nth timeout on the device (counted across the run's trials: a "
        "wedge outlives them) the firmware refuses every context (PLAYS refuse, the "
        "default) or takes contexts and completes nothing (hang); as each tree does then: "
        "the driver's own restart fails (in-tree and staging: 'Create hwctx failed', the "
        "context left without a firmware channel, its later chains NEW at once, new "
        "contexts refused -EINVAL; legacy: the context dies at its next connect and every "
        "submit fails -EIO, 'DRM_IOCTL_AMDXDNA_EXEC_CMD IOCTL failed (err=-5)'); a module "
        "reload goes through, loading the firmware again, and leaves the device wedged (the "
        "stuck array is not reset), unless PLAYS adds reloads (a reload or a PCI rescan "
        "clears it)",
        "hypothesis from public reports: amd/xdna-driver PR #1585 (7.0.0-29: contexts refused "
        "MGMT_ERT_NOAVAIL once the device degraded), 1bit-MONSTER/1bit-MONSTER#1920 (a reload "
        "went through and did not clear it; an FLR left it 'not ready after FLR'), #1645 (a "
        "PCI remove and rescan cleared one: reloads); " + WEDGE_SOURCES,
        _wedge_makes, f"{_SIM}.stack and {_SIM}.device_life (what outlives a trial), the "
        "emulator through it", shown=_wedge_shown),
    Hypothesis(
        "firmware-dead", "N", "firmware_dead", _at_least_one,
        "at the driver's Nth timeout the firmware stops answering its mailbox (assumed "
        "trigger: nothing public says what kills it): its first unanswered message times "
        "out ('Wait for completion timeout', -ETIME) and takes the management channel, so "
        "every later one gets -ENODEV; staging's health query gets no answer ('Get app "
        "health failed, ret -62'), and it takes its firmware-dead path, 'NPU firmware "
        "unhealthy (ctx restart ret -19, health unresponsive) - power-cycling NPU', "
        "aie2_hw_reset reloading the firmware (at most once a minute), after which runs work "
        "again (without an app health report to ask for, the stop's 'Destroy context failed, "
        "ret -62' and 'not power-cycling'); the in-tree and legacy trees have no such path "
        "and keep a dead device (7.0: the stop's 'Destroy context failed, ret -62', then "
        "'Create hwctx failed, ret -19')",
        "amd/xdna-driver 856409ca drivers/accel/amdxdna/aie2_ctx.c aie2_sched_job_timedout "
        "(fw_dead), aie2_message.c aie2_query_app_health, aie2_destroy_context_req, aie.c "
        "aie_send_mgmt_msg_wait, aie2_pci.c aie2_hw_reset (AIE2_HW_RESET_MIN_INTERVAL_MS); "
        "234824b1 and f13c7f41 aie2_ctx.c aie2_hwctx_stop, aie2_message.c "
        "aie2_send_mgmt_msg_wait; 856409ca src/driver/amdxdna aie2_ctx.c aie2_dump_ctx, "
        "aie2_message.c aie2_get_app_health, aie2_destroy_context; amd/xdna-driver PR #1585",
        _firmware_dead, f"{_SIM}.stack and {_SIM}.device_life, the emulator through it"),
)}


# the stack's tokens and modes a profile gives at most once
ONCE = ("device", "kernel", "xrt", "seed", "realtime", "firmware")


def parse_profile(text: str | None) -> Profile:
    """Parse a profile string; errors name the token and list what is allowed."""
    if text is None or not text.strip():
        return Profile()
    values: dict[str, Any] = {}
    many: dict[str, list[Any]] = {entry.field: [] for entry in HYPOTHESES.values()
                                  if entry.many}
    seen: set[str] = set()
    for raw in text.split(","):
        token = raw.strip()
        if not token:
            continue
        head, _, rest = token.partition(":")
        hypothesis = HYPOTHESES.get(head)
        if head in ONCE or (hypothesis is not None and not hypothesis.many):
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
        elif token == FIRMWARE_TAKEN:
            values["firmware_taken"] = True
        elif head == "device" and rest in DEVICES:
            values["device"] = rest
        elif head == "kernel" and (release := kernel_release(rest)) is not None:
            major, minor, patch = release
            values["kernel"] = f"{major}.{minor}" + (f".{patch}" if patch else "")
        elif head == "firmware" and rest:
            values["firmware"] = rest
        elif head == "xrt" and rest in RELEASES:
            values["xrt"] = rest
        elif head == "seed" and re.fullmatch(_INT, rest):
            values["seed"] = _bounded(token, rest, MAX_SEED)
        elif hypothesis is not None and rest:
            value = hypothesis.read(token, rest)
            if hypothesis.many:
                many[hypothesis.field].append(value)
            else:
                values[hypothesis.field] = value
        else:
            raise BadInput(_refusal(token, text))
    for name, given in many.items():
        # positions are a set, in order; other repeated tokens keep the order given
        values[name] = tuple(sorted(set(given)) if all(isinstance(one, int) for one in given)
                             else given)
    profile = Profile(**values)
    _cap_can_fire(profile, text)
    return _settled_firmware(profile, text)


# what a parameter of one letter looks like, for the example a refusal gives
_EXAMPLES = {"N": "3", "K": "3", "S": "7", "P": "0.1"}


def _refusal(token: str, text: str) -> str:
    """Why `token` is refused: a known token without its parameter, or with one it does not
    take, is named with its form (`hang-at` lacks its :K); an unknown one gets the close
    names and every form."""
    head, _, rest = token.partition(":")
    see = "(see `runlist-harness sim profiles`)"
    forms: dict[str, str] = {}
    for doc in catalogue():
        forms.setdefault(doc.syntax.partition(":")[0], doc.syntax)
    form = forms.get(head)
    if form is None:
        import difflib
        # tokens are lowercase: `HANG-AT:3` is hang-at:3 mistyped, as `hangat:3` is
        close = difflib.get_close_matches(head.lower(), list(forms), n=1)
        meant = f"did you mean {forms[close[0]]}? " if close else ""
        return (f"unknown profile token {token!r} in {text!r}; {meant}allowed: "
                f"{', '.join(forms.values())} {see}")
    if ":" not in form:
        return f"profile token {token!r}: {head} takes no parameter; give {head} alone"
    wanted = form.partition(":")[2]
    example = f", e.g. {head}:{_EXAMPLES[wanted]}" if wanted in _EXAMPLES else ""
    if head == "kernel":
        example = (f", RELEASE a series of {', '.join(KERNELS)} or a point release such as "
                   "6.18.3")
    elif head == "xrt":
        example = f", RELEASE one of {', '.join(RELEASES)}"
    if not rest:
        return f"profile token {token!r} lacks its :{wanted}; give {form}{example} {see}"
    return f"profile token {token!r}: {head} does not take {rest!r}; give {form}{example} {see}"


def _cap_can_fire(profile: Profile, text: str) -> None:
    """Refuse an inflight-cap that can never be passed: a context holds at most
    JOBS_IN_FLIGHT jobs, each a chain of at most XRT's submit size, so no more commands are
    ever queued on it (96 with 24 a chain), and a bisect under a larger cap would claim a
    failure by construction that never happens."""
    cap = profile.inflight_cap
    most = JOBS_IN_FLIGHT * profile.xrt_chain
    if cap is not None and cap >= most:
        raise BadInput(f"profile {text!r}: inflight-cap:{cap} can never fire: at most "
                       f"{JOBS_IN_FLIGHT} jobs of {profile.xrt_chain} commands ({most}) are "
                       f"queued on a context (CTX_MAX_CMDS x XRT's submit size); give a cap "
                       f"below {most}")


def _settled_firmware(profile: Profile, text: str) -> Profile:
    """The profile with its firmware checked: a release public logs tie to a protocol, or
    a protocol; one that leaves app health unsettled is refused, naming what to give."""
    given = profile.firmware
    if given is None:
        return profile
    if given == firmware.DEVICE_FIRMWARE[profile.device]:
        return replace(profile, firmware=None)
    fix = ("give the release's protocol instead, e.g. firmware:protocol:6.18 (app health "
           "from 6.18 on npu4-class devices)")
    if given.startswith(PROTOCOL_TOKEN):
        protocol = firmware.parse_protocol(given[len(PROTOCOL_TOKEN):])
        if protocol is None:
            raise BadInput(f"profile {text!r}: firmware:{given} is no protocol; use "
                           "firmware:protocol:MAJOR.MINOR, e.g. firmware:protocol:6.18, or "
                           "MAJOR.x when only the major is known")
        profile = replace(profile, firmware=f"{PROTOCOL_TOKEN}{protocol.text}")
        what = f"firmware:protocol:{protocol.text}"
    else:
        release = firmware.RELEASES.get(given)
        if release is None:
            raise BadInput(f"profile {text!r}: firmware {given} is not one whose protocol "
                           f"the simulator knows ({', '.join(firmware.RELEASES)}); {fix}")
        protocol, what = release.protocol, f"firmware {given} (protocol {release.protocol.text})"
    asks = driver_build(profile.flavour, profile.kernel).asks_health
    if asks and firmware.has_app_health(profile.device_model.npu4_class, protocol) is None:
        raise BadInput(f"profile {text!r}: {what} does not settle whether the firmware "
                       f"reports health, which the {FLAVOURS[profile.flavour].called} driver "
                       f"on Linux {profile.kernel} asks for; {fix}")
    return profile


def _positive(token: str, digits: str) -> int:
    value = _bounded(token, digits, MAX_COUNT)
    if value < 1:
        raise _not_whole(token, 1)        # as `:-5` and `:1.5` are told
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
