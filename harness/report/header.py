"""A report's header read once into typed sections.

The harness writes the header as nested mappings (`harness.execution.environment`,
`harness.probe.fingerprint`, `harness.runner` build them); readers take it from here instead
of walking it with `.get(...) or {}` each. A section an older report lacks, or one a tool
edited into something other than a mapping, reads as absent in one place (`section`), so a
reader shows what it always showed for a missing section ("unknown", "not recorded") and
never crashes on a malformed one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# a key the header does not hold, told apart from one it holds as null: readers print "?"
# for the first and "None" for the second, as they always have
MISSING: Any = "?"


def section(value: Any) -> dict[str, Any]:
    """A header section as a mapping; anything else (absent, null, a list) as empty."""
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class Ioctl:
    firmware: Any = None
    power_mode: Any = None
    driver_version: Any = None


@dataclass(frozen=True)
class Npu:
    present: Any = None
    generation: Any = None
    ioctl: Ioctl = field(default_factory=Ioctl)
    sysfs_fw_version: Any = None

    @property
    def firmware(self) -> Any:
        """The firmware version the driver's ioctl reported, else sysfs's."""
        return self.ioctl.firmware or self.sysfs_fw_version


@dataclass(frozen=True)
class Driver:
    recorded: bool = False        # the probe wrote a driver section at all
    loaded: Any = None
    module: Any = None
    version: Any = None
    flavour: Any = None
    timeout_rule: Any = None
    parameters: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)   # as the probe wrote them


@dataclass(frozen=True)
class Pyxrt:
    recorded: bool = False        # pyxrt imported and the probe described it
    xrt_version: Any = None
    file: Any = None


@dataclass(frozen=True)
class Xrt:
    recorded: bool = False
    pyxrt: Pyxrt = field(default_factory=Pyxrt)
    pyxrt_error: Any = None
    mapped: tuple[str, ...] = ()


@dataclass(frozen=True)
class System:
    kernel: Any = None
    distribution: Any = None
    hostname: Any = None
    machine_id: Any = None
    machine_tag: Any = None       # tells machines apart without naming one (the probe's)

    def identity(self) -> str | None:
        """What tells this machine from another: its tag, else its machine id or host name
        where a redaction left them (a placeholder tells no machine apart)."""
        for value in (self.machine_tag, self.machine_id, self.hostname):
            if value and not str(value).startswith("<"):
                return str(value)
        return None


@dataclass(frozen=True)
class Memlock:
    soft: Any = None
    hard: Any = None


@dataclass(frozen=True)
class Environment:
    system: System = field(default_factory=System)
    npu: Npu = field(default_factory=Npu)
    driver: Driver = field(default_factory=Driver)
    xrt: Xrt = field(default_factory=Xrt)
    memlock: Memlock = field(default_factory=Memlock)
    # xrt-smi's runs by name, each as the probe stored it (only mappings kept)
    xrt_smi: dict[str, dict[str, Any]] = field(default_factory=dict)
    emulator: Any = None          # what `emulate` recorded of the run it served
    raw: dict[str, Any] = field(default_factory=dict)   # for readers not yet typed


@dataclass(frozen=True)
class ModelledDriver:
    """The driver build a simulated or emulated stack played (the backend's `driver`)."""

    flavour: str
    kernel: str


@dataclass(frozen=True)
class BackendInfo:
    kind: Any = None
    profile: Any = None
    emulated_xrt_version: Any = None
    documented: Any = True
    deviations: tuple[str, ...] = ()
    by_construction: tuple[str, ...] = ()
    modelled: bool = False        # the backend recorded the driver its model played
    driver: ModelledDriver | None = None   # ... and named its flavour
    isolation: Any = True         # False: the backend cannot isolate trials
    stand_in: Any = None          # the simulator stood in for pyxrt on the hardware path
    raw: dict[str, Any] = field(default_factory=dict)   # what model.is_simulated decides on


@dataclass(frozen=True)
class CaseInfo:
    name: Any = None
    flow: Any = None
    named: bool = False           # the section holds a name key (titles say "?" without)
    kind: str = "case"            # case, recipe or capture
    layers: int | None = None
    engine: str | None = None     # the engine's command line (`flm run minicpm5:2b`)
    nop_only: bool = False        # every run carried the one-NOOP stream
    runs_per_layer: Any = None

    @property
    def title_name(self) -> Any:
        return self.name if self.named else MISSING


@dataclass(frozen=True)
class HarnessInfo:
    argv: Any = None
    version: Any = MISSING
    commit: Any = None


@dataclass(frozen=True)
class Bisect:
    first: Any = None
    answer_text: Any = "unfinished"
    log: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Artifacts:
    xclbins: tuple[dict[str, Any], ...] = ()
    stand_ins: Any = None
    pack_name: Any = None


@dataclass(frozen=True)
class Settings:
    flow: Any = None
    isolate: Any = True
    deadline_s: Any = None
    model: Any = None             # serve-probe's tag


@dataclass(frozen=True)
class DriverTimer:
    """The driver's timer a run's trials met (`timers.driver`): its window, where it
    comes from; None where the flavour or kernel is not one the harness knows."""

    flavour: Any = None
    kernel: Any = None
    earliest_s: float | None = None
    latest_s: float | None = None
    source: Any = None

    @property
    def window(self) -> tuple[float, float] | None:
        if self.earliest_s is None or self.latest_s is None:
            return None
        return self.earliest_s, self.latest_s


@dataclass(frozen=True)
class Timers:
    """A report's `timers` (harness.report.timing.stack_timers writes them): the
    driver's, XRT's wait, the harness's deadline, and the clock times to failure are on."""

    clock: str = "wall"
    driver: DriverTimer = field(default_factory=DriverTimer)
    xrt_wait: Any = None
    harness_deadline_s: Any = None
    harness_deadline: Any = None


def _seconds(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def read_timers(value: Any) -> Timers | None:
    """A `timers` section, typed; None where the report kept none (or not as a mapping)."""
    if not isinstance(value, dict):
        return None
    driver = section(value.get("driver"))
    return Timers(clock=str(value.get("clock", "wall")),
                  driver=DriverTimer(flavour=driver.get("flavour"),
                                     kernel=driver.get("kernel"),
                                     earliest_s=_seconds(driver.get("earliest_s")),
                                     latest_s=_seconds(driver.get("latest_s")),
                                     source=driver.get("source")),
                  xrt_wait=value.get("xrt_wait"),
                  harness_deadline_s=value.get("harness_deadline_s"),
                  harness_deadline=value.get("harness_deadline"))


@dataclass(frozen=True)
class ReportHeader:
    command: Any
    case: CaseInfo
    backend: BackendInfo
    environment: Environment
    harness: HarnessInfo
    artifacts: Artifacts
    settings: Settings
    bisect: Bisect | None         # None: not a bisect's report
    timers: Timers | None         # None: the run kept no timers (or an old report)
    exports_missing: tuple[str, ...] = ()   # xclbins `export` could not ship


def mappings(value: Any) -> tuple[dict[str, Any], ...]:
    return tuple(item for item in value if isinstance(item, dict)) \
        if isinstance(value, list) else ()


def read_environment(value: Any) -> Environment:
    env = section(value)
    npu, driver, xrt = section(env.get("npu")), section(env.get("driver")), \
        section(env.get("xrt"))
    ioctl, pyxrt = section(npu.get("ioctl")), section(xrt.get("pyxrt"))
    system, memlock = section(env.get("system")), section(env.get("memlock"))
    return Environment(
        system=System(kernel=system.get("kernel"), distribution=system.get("distribution"),
                      hostname=system.get("hostname"), machine_id=system.get("machine_id"),
                      machine_tag=system.get("machine_tag")),
        npu=Npu(present=npu.get("present"), generation=npu.get("generation"),
                ioctl=Ioctl(firmware=ioctl.get("firmware"),
                            power_mode=ioctl.get("power_mode"),
                            driver_version=ioctl.get("driver_version")),
                sysfs_fw_version=section(npu.get("sysfs")).get("fw_version")),
        driver=Driver(recorded=bool(driver), loaded=driver.get("loaded"),
                      module=driver.get("module"), version=driver.get("version"),
                      flavour=driver.get("flavour"), timeout_rule=driver.get("timeout_rule"),
                      parameters=section(driver.get("parameters")), facts=driver),
        xrt=Xrt(recorded=bool(xrt),
                pyxrt=Pyxrt(recorded=bool(pyxrt), xrt_version=pyxrt.get("xrt_version"),
                            file=pyxrt.get("file")),
                pyxrt_error=xrt.get("pyxrt_error"),
                mapped=tuple(lib.get("path", "") for lib in mappings(xrt.get("mapped")))),
        memlock=Memlock(soft=memlock.get("soft"), hard=memlock.get("hard")),
        xrt_smi={name: run for name, run in section(env.get("xrt_smi")).items()
                 if isinstance(run, dict)},
        emulator=env.get("emulator"), raw=env)


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(map(str, value)) if isinstance(value, list) else ()


def read_backend(value: Any) -> BackendInfo:
    backend = section(value)
    modelled = backend.get("driver")
    driver = section(modelled)
    return BackendInfo(kind=backend.get("kind"), profile=backend.get("profile"),
                       emulated_xrt_version=section(backend.get("emulated")).get("xrt_version"),
                       documented=backend.get("documented", True),
                       deviations=_texts(backend.get("deviations")),
                       by_construction=_texts(backend.get("by_construction")),
                       modelled=isinstance(modelled, dict),
                       driver=ModelledDriver(str(driver["flavour"]), str(driver.get("kernel")))
                       if driver.get("flavour") else None,
                       isolation=backend.get("isolation", True),
                       stand_in=backend.get("stand_in"), raw=backend)


def read_case(value: Any) -> CaseInfo:
    case = section(value)
    layers = case.get("layers")
    return CaseInfo(name=case.get("name"), flow=case.get("flow"), named="name" in case,
                    kind=str(case.get("kind") or "case"),
                    layers=layers if isinstance(layers, int) else None,
                    engine=str(case["engine"]) if case.get("engine") else None,
                    nop_only=bool(section(case.get("workload")).get("nop_only")),
                    runs_per_layer=case.get("runs_per_layer"))


def read_settings(value: Any) -> Settings:
    settings = section(value)
    return Settings(flow=settings.get("flow"), isolate=settings.get("isolate", True),
                    deadline_s=settings.get("deadline_s"), model=settings.get("model"))


def read_header(data: dict[str, Any]) -> ReportHeader:
    """The header's sections, typed: a checked report's, or an old or edited one's, where
    an absent or malformed section reads as the defaults above."""
    case, harness = section(data.get("case")), section(data.get("harness"))
    artifacts = section(data.get("artifacts"))
    bisect = section(data.get("bisect"))
    answer = section(bisect.get("answer"))
    return ReportHeader(
        command=data.get("command"),
        case=read_case(case),
        backend=read_backend(data.get("backend")),
        environment=read_environment(data.get("environment")),
        harness=HarnessInfo(argv=harness.get("argv"), version=harness.get("version", MISSING),
                            commit=harness.get("commit")),
        artifacts=Artifacts(xclbins=mappings(artifacts.get("xclbins")),
                            stand_ins=section(artifacts.get("pack")).get("stand_ins"),
                            pack_name=section(artifacts.get("pack")).get("name")),
        settings=read_settings(data.get("settings")),
        bisect=Bisect(first=answer.get("first"),
                      answer_text=answer.get("text", "unfinished"),
                      log=mappings(bisect.get("log"))) if data.get("bisect") else None,
        timers=read_timers(data.get("timers")),
        exports_missing=_texts(section(data.get("exports")).get("missing")))


def as_header(data: ReportHeader | dict[str, Any]) -> ReportHeader:
    """A header read once and passed on, or a mapping read here."""
    return data if isinstance(data, ReportHeader) else read_header(data)
