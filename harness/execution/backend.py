"""Which XRT module the harness drives: the real `pyxrt` or the simulated one.

This is the only module that knows the difference: one small protocol (`Backend`) with
an implementation for each stack (`HardwareBackend`, `SimulatedBackend`, and
`EmulatedBackend`: the hardware path over the emulated driver), as a test
framework keeps protocols apart from the drivers that implement them. Everything else
receives `Backend.xrt`, a module with the pyxrt surface, and runs the same code either
way. `auto` takes hardware when `pyxrt` imports and an NPU device node exists,
else the simulated stack, and says which (`harness.probe.xrt_loader` finds both).

`hardware` says which code path runs (the hardware one: deadlines from the probed
driver, teardown, no simulator configuration); `simulated` says where results
come from, and is also true on the hardware path when the "pyxrt" loaded is the
harness's own simulator standing in (the tests of the hardware path do that), and
under `runlist-harness emulate` (`emulated`): real pyxrt and XRT then answer, but over
the harness's driver and firmware model, so results are EMULATED, never hardware
evidence.
"""

from __future__ import annotations

import gc
import hashlib
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

from harness.execution.settings import KINDS
from harness.logs.driver_lines import trial_entry
from harness.logs.kernel_log import reading_of
from harness.model.drivers import FLAVOURS, driver_build, slowest_seconds, timeout_seconds
from harness.model.errors import BadInput, EnvironmentNotReady
from harness.model.ert import NO_STATE_IN_MESSAGE, STATE_IN_MESSAGE, expected_message_form
from harness.model.firmware import NOT_MODELLED, NOT_MODELLED_WORD
from harness.model.text_enum import TextEnum
from harness.probe.emulation import emulation
from harness.probe.xrt_loader import is_stand_in, load_pyxrt, npu_nodes

if TYPE_CHECKING:          # the simulator loads only when the simulated backend is chosen
    from harness.sim.profiles import Profile

XRT_SUBMIT_SIZE = 24          # STACK.md 2: hard-wired in runlist_impl


class BackendKind(TextEnum):
    XRT = "xrt"                       # the hardware path: the real pyxrt
    SIM = "sim"                       # the simulated stack, in process


@dataclass
class Backend(ABC):
    """What runs trials, as the rest of the harness sees it: an XRT module with the pyxrt
    surface, and what the run needs to know of the stack behind it. Its implementations,
    `HardwareBackend`, `SimulatedBackend` and `EmulatedBackend` (the hardware path over the
    emulated driver), each answer for their own stack; nothing outside this module asks
    which one it holds, beyond `hardware` and `simulated`."""

    xrt: ModuleType
    profile: Profile | None = None
    reason: str = ""                  # why auto chose this backend
    latencies: dict[str, float] = field(default_factory=dict)

    kind: ClassVar[BackendKind]
    hardware: ClassVar[bool]          # the hardware code path runs (see the module's note)

    @property
    @abstractmethod
    def simulated(self) -> bool:
        """Whether results come from the simulator (also standing in on the hardware path)."""

    @property
    def submit_size(self) -> int:
        return self.profile.xrt_chain if self.profile else XRT_SUBMIT_SIZE

    @abstractmethod
    def describe(self) -> str:
        """The first line of output: which stack the results come from."""

    @abstractmethod
    def as_report(self) -> dict[str, Any]:
        """The report's `backend`: what answered, and the stack it modelled if any."""

    @abstractmethod
    def xrt_release(self) -> dict[str, Any]:
        """Which XRT release answers, and the failure message form it writes."""

    @abstractmethod
    def adopt_environment(self, environment: dict[str, Any]) -> None:
        """Take what the probe found that the trials need."""

    @abstractmethod
    def firmware_reports_health(self) -> bool | None:
        """Whether the firmware answers the driver's app health query (None: not known).
        Without it, health lines in XRT's message are not the firmware's account (the
        legacy driver copies its context's zeroed health data)."""

    @abstractmethod
    def prepare_trial(self, seed: int, device: dict[str, Any] | None = None) -> None:
        """Make ready for one trial with its own seed (`device`: what earlier trials left
        on a simulated device, `device_life`)."""

    def device_life(self) -> dict[str, Any] | None:
        """What the device keeps from one trial to the next where the stack is a model that
        plays it (harness.sim.device_life), to hand to the next trial; None otherwise."""
        return None

    def adopt_device_life(self, life: dict[str, Any] | None) -> None:
        """Take what a trial (in a worker too) left on the device: nothing to take where
        the device is a machine's, which keeps its own state."""
        return None

    def wedged_device(self) -> dict[str, Any] | None:
        """The device's wedged state, where the stack knows it (the simulated one): what a
        trial that runs now is marked with. None on a machine: there the recovery check
        after a failure says it, and the run stops."""
        return None

    def simulated_trace(self, failed: bool) -> dict[str, Any] | None:
        """The driver's trace events the simulated driver emitted during this trial, read
        as tracefs's buffer is (`harness.logs.trace_events`); None where the run reads its
        own, or nothing failed."""
        return None

    def recorded_health(self, health: dict[str, Any] | None) -> dict[str, Any] | None:
        """The health fields read from XRT's message, as a report records them: none where
        the firmware does not report health (what XRT's message may still carry is not the
        firmware's account: the legacy driver copies its context's zeroed data; the message
        keeps them)."""
        return None if health and self.firmware_reports_health() is False else health

    def device_clock(self) -> Callable[[], float] | None:
        """The device's clock (microseconds) for the current trial, where there is one."""
        return None

    def simulated_kernel_log(self, failed: bool) -> dict[str, Any] | None:
        """The kernel log the simulated driver printed during this trial, read as a real
        one is (`harness.logs.kernel_log`); None where the run reads its own."""
        return None

    @abstractmethod
    def driver_timeout_s(self) -> float:
        """The longest time the driver may take to notice a hang (for deadlines)."""


@dataclass
class HardwareBackend(Backend):
    """The real pyxrt, or the simulator standing in for it (`stand_in`, as the tests of
    the hardware path load it), on this machine's driver and firmware."""

    stand_in: bool = False            # the hardware path driving the simulated pyxrt
    # What the probe found: the loaded driver's timeout, pyxrt's XRT version, the firmware.
    hardware_timeout_s: float | None = None
    hardware_xrt_version: str | None = None
    hardware_app_health: bool | None = None

    kind: ClassVar[BackendKind] = BackendKind.XRT
    hardware: ClassVar[bool] = True

    @property
    def simulated(self) -> bool:
        return self.stand_in

    def describe(self) -> str:
        origin = getattr(self.xrt, "__file__", "?")
        if self.stand_in:
            played = self.stand_in_profile()
            plays = "" if played is None else f", profile {played.name}" + (
                "" if played.documented else f"; hypothesis {','.join(played.deviations)}")
            return (f"backend: hardware path, but pyxrt is the SIMULATED stand-in ({origin}"
                    f"{plays}); not hardware evidence")
        version = f", XRT {self.hardware_xrt_version}" if self.hardware_xrt_version else ""
        return f"backend: hardware NPU through pyxrt ({origin}{version})"

    def as_report(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "simulated": self.simulated,
                               "pyxrt": getattr(self.xrt, "__file__", None)}
        if self.stand_in:
            out["stand_in"] = True
            played = self.stand_in_profile()
            if played is not None:
                # not "profile": that key picks the simulated backend on continuing a report
                build = driver_build(played.flavour, played.kernel)
                out.update({"stand_in_profile": played.name, "documented": played.documented,
                            "deviations": played.deviations,
                            "driver": {"flavour": build.flavour, "kernel": build.kernel,
                                       "source": build.source},
                            "device": {"name": played.device_model.name,
                                       "columns": played.device_model.columns}})
                if played.by_construction:
                    out["by_construction"] = played.by_construction
        if self.reason:
            out["reason"] = self.reason
        out["xrt"] = self.xrt_release()
        return out

    def stand_in_profile(self) -> Profile | None:
        """The profile the simulator standing in for pyxrt plays on the hardware path: the
        one its environment names, as each worker's stand-in reads it (harness.sim.control).
        None when the stand-in is not built on the simulator (it is then not loaded)."""
        if "harness.sim.pyxrt" not in sys.modules:
            return None
        from harness.sim.control import PROFILE_ENV
        from harness.sim.profiles import parse_profile
        return parse_profile(os.environ.get(PROFILE_ENV))

    def xrt_release(self) -> dict[str, Any]:
        """The simulator's release when it stands in, else the install's."""
        played = self.stand_in_profile() if self.stand_in else None
        if played is not None:
            return _simulated_release(played)
        return {"release": self.hardware_xrt_version,
                "message_form": expected_message_form(self.hardware_xrt_version),
                "source": "BUILD_VERSION of the XRT install pyxrt came from"}

    def adopt_environment(self, environment: dict[str, Any]) -> None:
        """Take the driver's timeout, the XRT version and the firmware from the probe."""
        self.hardware_timeout_s = timeout_seconds(environment.get("driver") or {})
        pyxrt = (environment.get("xrt") or {}).get("pyxrt") or {}
        self.hardware_xrt_version = pyxrt.get("xrt_version")
        self.hardware_app_health = (environment.get("npu_firmware") or {}).get("app_health")

    def firmware_reports_health(self) -> bool | None:
        return self.hardware_app_health

    def prepare_trial(self, seed: int, device: dict[str, Any] | None = None) -> None:
        """Nothing: the device is the machine's, and a seed changes nothing on it."""

    def driver_timeout_s(self) -> float:
        # Unknown flavour: assume the slowest rule (mainline's 60 s).
        return self.hardware_timeout_s or slowest_seconds()


class PlaysAProfile:
    """A stack whose answers are the model's, playing `profile`: its results are never
    hardware evidence, whatever code path ran them."""

    profile: Profile | None

    @property
    def simulated(self) -> bool:
        return True

    @property
    def played(self) -> Profile:
        assert self.profile is not None
        return self.profile


@dataclass
class SimulatedBackend(PlaysAProfile, Backend):
    """The simulated stack, in process, playing `profile`."""

    # the current trial's simulated device clock (prepare_trial sets it)
    _clock: Callable[[], float] | None = field(default=None, repr=False, compare=False)
    # what the simulated device carries from trial to trial (harness.sim.device_life)
    _life: Any = field(default=None, repr=False, compare=False)

    kind: ClassVar[BackendKind] = BackendKind.SIM
    hardware: ClassVar[bool] = False

    def describe(self) -> str:
        profile = self.played
        nature = ("documented limits" if profile.documented
                  else "hypothesis " + ",".join(profile.deviations))
        tail = f"; {self.reason}" if self.reason else ""
        build = driver_build(profile.flavour, profile.kernel).name
        return (f"backend: SIMULATED stack, profile {profile.name} ({nature}; {build}, "
                f"XRT {profile.release.name}); not hardware evidence{tail}")

    def as_report(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "simulated": True,
                               "pyxrt": getattr(self.xrt, "__file__", None),
                               **_modelled_stack(self.played)}
        if self.reason:
            out["reason"] = self.reason
        out["xrt"] = self.xrt_release()
        return out

    def xrt_release(self) -> dict[str, Any]:
        return _simulated_release(self.played)

    def adopt_environment(self, environment: dict[str, Any]) -> None:
        """The simulated stack's driver, firmware and XRT are its profile's; what records
        its driver's trace events is the simulated driver itself, not this machine's
        tracefs (whose state and advice would say nothing of it)."""
        tree = FLAVOURS[self.played.flavour].trace
        environment["trace_events"] = {
            "recording": True, "simulated": True, "system": tree.system,
            "enabled": ["xdna_job"], "source": tree.source,
            "note": "SIMULATED: the simulated driver's own xdna_job events, kept with each "
                    "failed trial"}

    def firmware_reports_health(self) -> bool | None:
        return self.played.app_health

    def prepare_trial(self, seed: int, device: dict[str, Any] | None = None) -> None:
        """Give each trial a fresh simulated device and its own seed (from the trial's and
        the profile's `seed:S`), with what earlier trials left on it (`device`, or this
        backend's own record of it)."""
        from harness.sim import control
        from harness.sim.device_life import DeviceLife
        if device is not None:
            self._life = DeviceLife.from_json(device)
        elif self._life is None or not self._plays_life():
            self._life = DeviceLife()
        mixed = (seed + self.played.seed * 1_000_003) % 2**32
        self._clock = control.configure(self.played.with_seed(mixed),
                                        latencies=self.latencies, life=self._life).clock.now

    def _plays_life(self) -> bool:
        return self.played.wedge is not None or self.played.firmware_dead is not None

    def device_life(self) -> dict[str, Any] | None:
        if self._life is None or not self._plays_life():
            return None
        return self._life.to_json()

    def adopt_device_life(self, life: dict[str, Any] | None) -> None:
        if life is not None:
            from harness.sim.device_life import DeviceLife
            self._life = DeviceLife.from_json(life)

    def wedged_device(self) -> dict[str, Any] | None:
        life = self._life
        if life is None or not life.wedged:
            return None
        return {"state": life.state_text(), "since": life.since, "simulated": True}

    def simulated_trace(self, failed: bool) -> dict[str, Any] | None:
        if not failed:
            return None
        from harness.logs.trace_events import MAX_KEPT_LINES, parse_trace
        from harness.logs.trace_events import trial_entry as trace_entry
        from harness.sim import control
        trace = control.current().trace
        # only the lines a report keeps are printed; the counts are the whole buffer's. The
        # collector pauses meanwhile, as for the trial: what this makes is freed by its
        # reference counts, and a buffer of thousands of jobs would call it a dozen times
        collecting = gc.isenabled()
        gc.disable()
        try:
            lines = parse_trace(trace.text(MAX_KEPT_LINES))
            return trace_entry(lines, "simulated tracefs", simulated=True,
                               total=len(trace.events()), timed_out=trace.timed_out())
        finally:
            if collecting:
                gc.enable()

    def device_clock(self) -> Callable[[], float] | None:
        return self._clock

    def prepare_rehearsal(self) -> None:
        """A fresh simulated device playing the documented stack below this profile (no
        hypothesis, the virtual clock): what a fork server runs its rehearsals on, where
        no hang can block and nothing of the profile's plays (`harness.execution.session`
        `warm`)."""
        from harness.sim import control
        self._clock = control.configure(self.played.documented_base(),
                                        latencies=self.latencies).clock.now

    def simulated_kernel_log(self, failed: bool) -> dict[str, Any] | None:
        from harness.sim import control
        text = control.current().kernel_log.kmsg()
        return trial_entry(reading_of(text, "simulated /dev/kmsg"), self.played.flavour,
                           failed, simulated=True)

    def driver_timeout_s(self) -> float:
        return driver_build(self.played.flavour, self.played.kernel).worst_seconds


@dataclass
class EmulatedBackend(PlaysAProfile, HardwareBackend):
    """Real pyxrt and XRT on the hardware path, over the harness's emulated driver
    (`runlist-harness emulate`): what answers below XRT is the model playing `profile`, so
    results are EMULATED, never hardware evidence."""

    # what the emulator says of itself: its profile, preload library, the XRT mapped
    emulated: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        origin = getattr(self.xrt, "__file__", "?")
        version = f", XRT {self.hardware_xrt_version}" if self.hardware_xrt_version else ""
        return (f"backend: EMULATED NPU, profile {self.emulated['profile']}: the real "
                f"pyxrt ({origin}{version}) and XRT over the harness's emulated driver "
                f"({self.emulated['preload']}); not hardware evidence")

    def as_report(self) -> dict[str, Any]:
        out = super().as_report()
        out["emulated"] = dict(self.emulated, xrt_version=self.hardware_xrt_version)
        out.update(_modelled_stack(self.played))
        return out

    def recorded_health(self, health: dict[str, Any] | None) -> dict[str, Any] | None:
        """As on hardware; and the words the model does not know, which the emulated device
        wrote as NOT_MODELLED_WORD, are recorded as what they are (XRT's message keeps the
        number it printed)."""
        health = super().recorded_health(health)
        if not health:
            return health
        return {name: NOT_MODELLED if value == NOT_MODELLED_WORD else value
                for name, value in health.items()}

    def adopt_environment(self, environment: dict[str, Any]) -> None:
        super().adopt_environment(environment)
        # the libraries the probe saw mapped once it opened the device (the shim too)
        mapped = (environment.get("xrt") or {}).get("mapped") or []
        self.emulated["xrt_libraries"] = [lib["path"] for lib in mapped] or \
            self.emulated.get("xrt_libraries", [])


def _modelled_stack(played: Profile) -> dict[str, Any]:
    """What a report records of the stack a profile models: the profile, the driver build,
    the firmware and the device."""
    build = driver_build(played.flavour, played.kernel)
    out: dict[str, Any] = {
        "profile": played.name, "documented": played.documented,
        "deviations": played.deviations, "realtime": played.realtime,
        "driver": {"flavour": build.flavour, "kernel": build.kernel, "source": build.source},
        "firmware": played.firmware_facts(),
        "device": {"name": played.device_model.name, "columns": played.device_model.columns}}
    if played.by_construction:
        out["by_construction"] = played.by_construction
    return out


def _simulated_release(played: Profile) -> dict[str, Any]:
    """The XRT release the simulator plays, and the failure message form it writes."""
    release = played.release
    return {"release": release.name, "tag": release.tag,
            "message_form": STATE_IN_MESSAGE if release.state_in_message
            else NO_STATE_IN_MESSAGE,
            "source": f"simulated as Xilinx/XRT {release.tag}"}


def _emulated_node(node: str, why: str) -> str | None:
    """What to say of an NPU node that is `runlist-harness emulate`'s when pyxrt does not
    import (`why`), or None where this process runs under no emulation: that node is the
    emulator's, not a device of this machine, and emulate runs real XRT over it."""
    from harness.probe.emulation import emulation, requested
    if emulation() is not None:
        whose = f"{node} is the EMULATED NPU of `runlist-harness emulate`, not this machine's"
    elif requested():
        whose = (f"this runs under `runlist-harness emulate`, whose library is not mapped "
                 f"here, so {node} may be this machine's own NPU or the emulator's")
    else:
        return None
    return (f"{whose}, and pyxrt does not import ({why}): emulate runs real XRT over its "
            "emulated driver, so install or build XRT with the XDNA shim and `source` its "
            "setup.sh (emulate's first line says whether it found one), or run without "
            "emulate on the simulated stack: --backend sim")


def choose_backend(kind: str = "auto", profile: str | None = None, *,
                   realtime: bool = False, fallback: bool = True) -> Backend:
    """The backend `kind` asks for. `fallback=False` (a `git bisect run` test) never takes
    the simulated stack unless `kind` is "sim": `auto` then needs the hardware as `xrt`
    does, since a bisection whose commits never load pyxrt would otherwise test the
    simulator at every commit and name a wrong first bad commit."""
    if kind not in KINDS:
        raise BadInput(f"--backend {kind!r}: use one of {', '.join(KINDS)}")
    if kind == "xrt" and profile:
        raise BadInput("--profile applies to the simulated stack only; drop it or use "
                       "--backend sim")
    if kind == "auto" and not fallback:
        if profile:
            raise BadInput("--profile with --exit-codes git-bisect: a bisection runs on the "
                           "simulated stack only when asked by name; add --backend sim")
        kind = "xrt"
    if kind in ("auto", "xrt") and not profile:
        module, why = load_pyxrt()
        nodes = npu_nodes()
        if module is not None and nodes:
            reason = f"pyxrt imported, {nodes[0]} present"
            emulated = None if is_stand_in(module) else emulation()
            if emulated is not None:     # the model behind the driver: its profile's rules
                from harness.sim.profiles import parse_profile
                return EmulatedBackend(module, parse_profile(emulated["profile"]), reason,
                                       emulated=emulated)
            return HardwareBackend(module, reason=reason, stand_in=is_stand_in(module))
        if kind == "xrt" or module is None and nodes:
            # an NPU without pyxrt is a missing `source`, not a wish for the simulator
            if module is None and nodes and (theirs := _emulated_node(nodes[0], why)):
                raise EnvironmentNotReady(theirs)
            if module is None:
                raise EnvironmentNotReady(
                    (f"this machine has an NPU ({nodes[0]}) but " if nodes else "")
                    + f"pyxrt does not import ({why}); run `source /opt/xilinx/xrt/setup.sh` "
                    "first" + (", or ask for the simulator with --backend sim" if nodes
                               else " or use --backend sim"))
            raise EnvironmentNotReady("no NPU device node under /dev/accel; check that the "
                                      "amdxdna driver is loaded (`runlist-harness probe`) "
                                      "or use --backend sim")
        reason = ("pyxrt does not import here" if module is None
                  else "no NPU device node here") + ", so the simulated stack ran instead"
    else:
        reason = "" if kind == "sim" else "chosen because a profile was given"
    from harness.sim import pyxrt as sim_pyxrt
    from harness.sim.control import refused_at_probe
    from harness.sim.profiles import parse_profile
    profile, played_here = _with_this_machine(profile)
    parsed = parse_profile(profile)
    refused = refused_at_probe(parsed)
    if refused:
        # as on a machine without an NPU node: the environment is not ready
        raise EnvironmentNotReady(refused)
    if realtime:
        parsed = parsed.with_realtime()
    reason = "; ".join(filter(None, (reason, played_here)))
    return SimulatedBackend(sim_pyxrt, parsed, reason)


def _with_this_machine(profile: str | None) -> tuple[str | None, str]:
    """On a machine with an NPU, the simulator plays its probed driver flavour, kernel and
    NPU, unless the profile names them: a simulated run there is compared with that
    machine, not with the simulator's default stack. The profile, and what was added."""
    from harness.probe.machine_stack import probed_stack
    from harness.probe.readers import Sources
    probed = probed_stack(Sources.live())
    if probed is None:
        return profile, ""
    from harness.model.drivers import FLAVOURS
    from harness.sim.profiles import FIRMWARE_TAKEN, parse_profile
    given = [token.strip() for token in (profile or "").split(",") if token.strip()]
    named = {"flavour" if token in FLAVOURS else token.partition(":")[0] for token in given}
    added, unknown = [], list(probed.unknown)
    for token in probed.tokens:
        if ("flavour" if token in FLAVOURS else token.partition(":")[0]) in named:
            continue
        try:                                 # a firmware release the simulator does not know
            parse_profile(token)
        except BadInput:
            unknown.append(f"{token} (not a release the simulator knows)")
            continue
        added.append(token)
    if not added and not unknown:
        return profile, ""
    said = (f"playing this machine's stack as probed: {','.join(added)}" if added
            else "this machine's stack as probed is named by the profile")
    if unknown:
        said += f" (not played: {'; '.join(unknown)})"
    taken = _firmware_taken(added, given)
    if taken:
        added.append(FIRMWARE_TAKEN)
        said += f"; {taken}"
    return ",".join(added + given) or None, said


def _firmware_taken(added: list[str], given: list[str]) -> str | None:
    """The probe found a working /dev/accel node, so the machine's driver took its
    firmware: where the probed kernel and firmware would be refused at probe (kernel.org
    mainline before 7.0 and protocol-7 firmware; a distribution kernel may carry
    f1eac46fe5f7), what the simulated stack then assumes, in words. None otherwise, or
    when the profile names the kernel or firmware itself (then it plays what it names)."""
    from harness.sim.profiles import FIRMWARE_TAKEN, parse_profile
    named = {token.partition(":")[0] for token in given}
    if {"kernel", "firmware", FIRMWARE_TAKEN} & named:
        return None
    try:
        played = parse_profile(",".join(added + given))
    except BadInput:
        return None
    if not played.probe_refusal:
        return None
    protocol = played.protocol.text if played.protocol else "unknown"
    return (f"its /dev/accel node works, so its driver took firmware "
            f"{played.firmware_version or played.firmware} (protocol {protocol}), which "
            f"kernel.org's Linux {played.kernel} refuses: played as {FIRMWARE_TAKEN} (the "
            "protocol check passed, as on a kernel carrying f1eac46fe5f7)")


def trial_seed(base: int, plan: str, trial: int) -> int:
    """A reproducible seed per trial, so a flaky profile varies across trials but not runs."""
    digest = hashlib.sha256(f"{base}/{plan}/{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "little")
