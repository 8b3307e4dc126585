"""Options shared by the commands that run trials.

Loaded to make a command's options (its `--help` included), so it imports what runs a
trial only when a run starts (`tests/test_start_up.py`)."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness.app import exits
from harness.execution.settings import KINDS, RunOptions, Setting
from harness.model.errors import BadInput

if TYPE_CHECKING:
    from harness.execution.backend import Backend
    from harness.execution.runner import Progress, Runner
    from harness.model.plan import Plan
    from harness.report.model import Report
    from harness.sources.case import Case

# The longest wait the harness can make: its waits end in system calls that take a C int
# of milliseconds (poll, epoll), about 24.8 days.
MAX_WAIT_S = (2**31 - 1) // 1000


class Quantity(click.ParamType):
    """A finite number of `unit` at or above a minimum (above it, with `above`) and at most
    a maximum, every refusal naming the unit and both bounds: nan and inf are refused by
    name (a plain FloatRange lets nan through, as nan compares false with everything)."""

    name = "number"

    def __init__(self, minimum: float, maximum: float = MAX_WAIT_S, *, unit: str = "seconds",
                 above: bool = False, note: str = "") -> None:
        self.minimum = minimum
        self.maximum = maximum
        self.unit = unit
        self.above = above
        # e.g. "a number of minutes above 0 and at most 10,080 (one week)"
        self.bounds = (f"a number of {unit} {'above' if above else 'at least'} {minimum:g} "
                       f"and at most {_number(maximum)}{note}")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None
                ) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number; give {self.bounds}", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number; give {self.bounds}", param, ctx)
        if number < self.minimum or (self.above and number == self.minimum):
            self.fail(f"{value} {self.unit} is {'not above' if self.above else 'below'} the "
                      f"minimum {self.minimum:g}; give {self.bounds}", param, ctx)
        if number > self.maximum:
            self.fail(f"{value} {self.unit} is past the maximum {_number(self.maximum)}; "
                      f"give {self.bounds}", param, ctx)
        return number


def _number(value: float) -> str:
    """``10,080``, ``0.5``: a bound as a person reads it."""
    return f"{int(value):,}" if value == int(value) else f"{value:g}"


class Seconds(Quantity):
    """A number of seconds within bounds (`Quantity`)."""

    def __init__(self, minimum: float, maximum: float = MAX_WAIT_S) -> None:
        super().__init__(minimum, maximum, unit="seconds")


def declared_settings() -> list[Setting]:
    """The run settings the command line offers, as `RunOptions` declares them."""
    return [setting for item in fields(RunOptions) if (setting := item.metadata.get("setting"))]


@dataclass
class RunRequest:
    """What the command line asks of a run besides its case and plans, in one object from
    the options to the run (`start_run`): the backend, the report file, what the case may
    name, and the run settings (`settings`, by the command's parameter, as given; one not
    given takes its option's default)."""

    backend_kind: str = "auto"
    profile: str | None = None
    realtime: bool = False
    xclbins_dir: str | None = None
    out: str | None = None
    force: bool = False
    # None: not given; True: also xrt-smi validate before the trials; False: no control
    xrt_smi_validate: bool | None = None
    allow_outside_paths: bool = False
    allow_other_pack: bool = False
    as_json: bool = False
    settings: dict[str, Any] = field(default_factory=dict)

    def setting(self, param: str) -> Any:
        """The value of the setting whose option fills `param`, as the command line gave it."""
        if param in self.settings:
            return self.settings[param]
        for setting in declared_settings():
            if setting.param == param:
                return setting.option_default
        raise KeyError(f"no run setting fills {param}")

    @property
    def trials(self) -> int | None:
        value = self.setting("trials")
        return int(value) if value is not None else None

    @property
    def no_isolate(self) -> bool:
        return bool(self.setting("no_isolate"))


ALLOW_OUTSIDE_PATHS = click.option("--allow-outside-paths", is_flag=True,
                                   help="Let a case of your own name files outside its "
                                        "folder (recipes and captures never may).")


def _setting_option(setting: Setting, defaults: dict[str, str]) -> Callable:
    """The click option of a declared setting (`defaults`: how this command names the
    fallback a `{default}` in its help stands for, by parameter)."""
    text = setting.help.format(default=defaults.get(setting.param, "the case's"))
    if setting.kind is bool:
        return click.option(setting.option, setting.param, is_flag=True, help=text)
    kind: Any
    if setting.choices is not None:
        kind = click.Choice(setting.choices)
    elif setting.kind is float:
        kind = Seconds(setting.low if setting.low is not None else 0.0,
                       setting.high if setting.high is not None else MAX_WAIT_S)
    elif setting.kind is int and (setting.low is not None or setting.high is not None):
        kind = click.IntRange(None if setting.low is None else int(setting.low),
                              None if setting.high is None else int(setting.high))
    else:
        kind = setting.kind
    return click.option(setting.option, setting.param, type=kind,
                        default=setting.option_default, show_default=setting.show_default,
                        help=text)


def _request_options(command: str, trials_default: str) -> list[Callable]:
    settings = [_setting_option(setting, {"trials": trials_default})
                for setting in declared_settings()
                if setting.commands is None or command in setting.commands]
    return [
        click.option("--backend", "backend_kind", type=click.Choice(KINDS), default="auto",
                     show_default=True,
                     help="auto: hardware when pyxrt imports and an NPU node exists, else "
                          "the simulated stack."),
        click.option("--profile", default=None,
                     help="Simulated stack profile, e.g. inflight-cap:40 or "
                          "staging,hang-at:3 (see `sim profiles`). Implies the simulator. "
                          "Default: the #712 machine's documented stack (mainline, the "
                          "in-tree driver, on Linux 7.0; npu5, firmware 1.1.2.65; XRT 2.26)."),
        click.option("--realtime", is_flag=True,
                     help="Simulated time passes in real time (waits really block)."),
        *settings,
        click.option("--xclbins", "xclbins_dir", type=click.Path(file_okay=False),
                     help="Folder holding the pack's xclbins (or <pack>/ under it)."),
        click.option("--out", type=click.Path(dir_okay=False),
                     help="Report file (default: reports/<case>-<time>-<id>.yaml)."),
        click.option("--force", is_flag=True, help="Replace --out if it exists."),
        click.option("--xrt-smi-validate/--no-xrt-smi-validate", default=None,
                     help="On hardware, once a plan of the case has failed, XRT's own "
                          "`xrt-smi validate --run runlist-latency` (one runlist of 1000 NOP "
                          "runs) runs once as a control, up to 2 minutes, and the verdict "
                          "names its answer; --no-xrt-smi-validate skips it. "
                          "--xrt-smi-validate also runs the whole `xrt-smi validate` before "
                          "the trials (up to 5 minutes). `xrt-smi examine` is always kept."),
        ALLOW_OUTSIDE_PATHS,
        click.option("--allow-other-pack", "allow_other_pack", is_flag=True,
                     help="Run with xclbins that FastFlowLM's table of shipped files knows as "
                          "another pack's folder than the case's (refused otherwise); the "
                          "report names each file that differs."),
        click.option("--json", "as_json", is_flag=True,
                     help="Print the report as JSON instead of the summary."),
    ]


def run_request_options(fn: Callable | None = None, *,
                        trials_default: str = "the case's, usually 3") -> Callable:
    """The options of every command that runs trials, handed to the command as one
    `request` (a RunRequest); the run settings' options are made from their declaration in
    `RunOptions`, each on the commands it names (by the function's name, which is the
    command's). `trials_default` says what --trials falls back to for this command. The
    options stay in the context's params, where a continued report looks for what it
    refuses."""
    if fn is None:
        return lambda f: run_request_options(f, trials_default=trials_default)
    names = [item.name for item in fields(RunRequest) if item.name != "settings"]
    params = [setting.param for setting in declared_settings()
              if setting.commands is None or fn.__name__ in setting.commands]

    @functools.wraps(fn)
    def gathered(*args: Any, **kwargs: Any) -> Any:
        request = RunRequest(**{name: kwargs.pop(name) for name in names},
                             settings={param: kwargs.pop(param) for param in params})
        return fn(*args, request=request, **kwargs)
    for option in reversed(_request_options(fn.__name__, trials_default)):
        gathered = option(gathered)
    return gathered


def make_backend(kind: str, profile: str | None, realtime: bool, *,
                 no_isolate: bool = False) -> Backend:
    from harness.execution.backend import choose_backend
    backend = choose_backend(kind, profile, realtime=realtime,
                             fallback=exit_convention() != exits.GIT_BISECT)
    if backend.hardware and no_isolate:
        click.echo("warning: --no-isolate on the hardware path: a pyxrt wait holds the GIL and "
                   "can block forever, and nothing can cut it off; without --no-isolate each "
                   "trial has a hard deadline", err=True)
    return backend


def run_options(case: Case, request: RunRequest, *, trials: int | None = None) -> RunOptions:
    """The options a run records, from what the command line asked (`trials`: the command's
    own count, where it has one)."""
    from harness.sources.case import CaseKind
    if request.no_isolate and request.setting("deadline") is not None:
        raise BadInput("--deadline bounds a trial's worker, and --no-isolate runs trials in this "
                       "process, where nothing can cut a wait off; drop one of them")
    if request.setting("flow") is not None and case.kind is not CaseKind.CASE:
        raise BadInput(f"--flow: a {case.kind}'s runs say themselves how they get their "
                       "control code (a ctrlcode ELF or not); drop --flow")
    values = {item.name: setting.from_option(request.setting(setting.param))
              for item in fields(RunOptions) if (setting := item.metadata.get("setting"))}
    values["trials"] = trials or request.trials or case.trials
    return RunOptions(**values, xrt_smi_control=request.xrt_smi_validate is not False)


def start_run(request: RunRequest, case: Case, plans: list[Plan] | None, command: str, *,
              trials: int | None = None, backend: Backend | None = None,
              progress: Progress | None = None) -> Runner:
    """Open the run the command line asked for: its backend (the one asked for, unless the
    caller has one), its options, the machine probed, the pack found and the report's first
    version written. `plans` None: the case's own; an empty list: added as a search goes."""
    from harness.execution.runner import open_run
    from harness.probe.xrt_config import capturing
    if request.out:             # refused before the machine is probed, as it is after
        from harness.report.output_file import check_output_path, check_report_name
        check_report_name(Path(request.out))
        check_output_path(Path(request.out), force=request.force)
    backend = backend or make_backend(request.backend_kind, request.profile, request.realtime,
                                      no_isolate=request.no_isolate)
    runner = open_run(case, plans, run_options(case, request, trials=trials), backend=backend,
                      xclbins_dir=request.xclbins_dir, out=request.out, force=request.force,
                      command=command, progress=progress,
                      xrt_smi_validate=bool(request.xrt_smi_validate),
                      allow_other_pack=request.allow_other_pack)
    if capturing():
        runner.warnings.append(
            "XRT's capture is on (Runtime.capture_frames): each isolated trial runs in a "
            "worker process whose XRT writes its own replay.json into the capture folder when "
            "it exits, so the folder ends with the last worker's; --no-isolate records the "
            "whole run in one" if not request.no_isolate else
            "XRT's capture is on (Runtime.capture_frames): while it records, the trials of "
            "one workload share one set of contexts, kernels and buffers (restored before "
            "each trial) and every runlist is kept to the end, since XRT's capture takes an "
            "object freed while it records and a new one at its address for each other")
    return runner


EXIT_CONVENTION = "exit_convention"


def exit_convention() -> str:
    """The --exit-codes convention of the running command (the backend choice depends on
    it: a bisection never falls back to the simulated stack)."""
    ctx = click.get_current_context(silent=True)
    return str(ctx.meta.get(EXIT_CONVENTION, exits.HARNESS)) if ctx else exits.HARNESS


# Parsed here for its help and its checked value; `harness.app.exits` reads it from the
# command line, so it holds even for a line that fails to parse.
exit_codes_option = click.option(
    exits.EXIT_CODES_OPTION, type=click.Choice(exits.CONVENTIONS), default=exits.HARNESS,
    show_default=True, expose_value=False,
    callback=lambda ctx, param, value: ctx.meta.__setitem__(EXIT_CONVENTION, value),
    help="git-bisect: exit 0 when every trial completed (good), 1 when one failed on the "
         "device (bad), 125 when the run could not tell (deadline, crash, environment, bad "
         "input), for `git bisect run`. It never falls back to the simulated stack: without "
         "pyxrt and an NPU it exits 125, unless --backend sim is given.")

allow_different_machine_option = click.option(
    "--allow-different-machine", is_flag=True,
    help="When continuing a report on hardware: add trials even though this machine's "
         "kernel, driver, firmware or XRT differ from the report's (the report notes it).")


frame_option = click.option(
    "--frame", default=None,
    help="For a capture: the frame whose runs the plans cut (frame_7 or 7; default: the "
         "deepest runlist).")


def with_frame(case: Case, frame: str | None) -> Case:
    if frame is None:
        return case
    from harness.sources.case import CaseKind
    if case.kind is not CaseKind.CAPTURE:
        raise BadInput(f"--frame picks a frame of an XRT capture; {case.name} is a {case.kind}")
    from harness.sources.capture_case import frame_case
    return frame_case(case, frame)


# What a continued report keeps from its first run besides its settings (RunOptions says
# those), and how to name the report's value.
_KEPT_BESIDES_SETTINGS: dict[str, tuple[str, Callable[[Report], Any]]] = {
    "profile": ("--profile", lambda r: r.backend.get("profile") or "none (hardware)"),
    "backend_kind": ("--backend", lambda r: r.backend.get("kind")),
    "realtime": ("--realtime", lambda r: bool(r.backend.get("realtime"))),
    "xclbins_dir": ("--xclbins", lambda r: "the recorded pack"),
    "out": ("--out", lambda r: "the report itself"),
    "force": ("--force", lambda r: "nothing to replace"),
    "allow_other_pack": ("--allow-other-pack", lambda r: "the recorded pack"),
}


def kept_on_resume() -> dict[str, tuple[str, Callable[[Report], Any]]]:
    """Each option a continued report refuses, by the command's parameter: the option and
    how to name the value the report holds."""
    return {**{param: (option, _from_settings(shown))
               for param, (option, shown) in RunOptions.kept_on_resume().items()},
            **_KEPT_BESIDES_SETTINGS}


def _from_settings(shown: Callable[[dict[str, Any]], Any]) -> Callable[[Report], Any]:
    def named(report: Report) -> Any:
        return shown(report.settings)
    return named


def diagnose_pointer(path: Path | str) -> str:
    """The line a run ends with: where its evidence is read into causes."""
    return (f"diagnose: runlist-harness diagnose {path} (the causes this evidence supports, "
            "ranked, each with its observations)")


def echo_json(path: Path, shown: Callable[[Any], Any] | None = None) -> None:
    """`--json`: the report as one JSON document, read back from its file a plan at a time
    (the file is what a run keeps; memory holds trials only in brief); each part as
    `shown` (redacted) where given."""
    from harness.report.fileformat import document_json
    from harness.report.reader import ReportReader
    with ReportReader(path) as reader:
        for text in document_json(reader, shown):
            click.echo(text, nl=False)
    click.echo()


def refuse_settings_on_resume(ctx: click.Context, report_path: str, how: str) -> None:
    """A continued report runs as it began: an option that would be ignored is refused,
    naming what the report holds, before the report is touched. So is an environment
    that would change how its trials run (HARNESS_WORKER_START), unless the report ran
    them in process."""
    from harness.execution.isolation import WORKER_START_ENV
    from harness.report.fileformat import load_report
    kept = kept_on_resume()
    given = [name for name in kept if name in ctx.params and
             ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE]
    asked_validate = bool(ctx.params.get("xrt_smi_validate"))
    start = os.environ.get(WORKER_START_ENV)
    if not given and not asked_validate and not start:
        return
    report = load_report(report_path, trials=False)
    named = [f"{kept[n][0]} (the report's: {kept[n][1](report)})" for n in given]
    if asked_validate:
        ran = "validate" in ((report.environment.get("xrt_smi") or {}) if
                             isinstance(report.environment.get("xrt_smi"), dict) else {})
        named.append("--xrt-smi-validate (the report's machine was probed once, when it "
                     f"began: xrt-smi validate {'ran' if ran else 'did not run'})")
    recorded = report.settings.get("worker_start")
    if start and recorded and start != recorded:
        named.append(f"{WORKER_START_ENV}={start} (the report's workers: {recorded})")
    if named:
        raise BadInput(f"{how} continues with the report's own settings; drop "
                       f"{'; '.join(named)}, or start a new run to change them")


def refuse_given(ctx: click.Context, names: dict[str, str], why: str) -> None:
    """Refuse the options (and arguments) of `names` that were given, naming only them:
    `names` maps each parameter to how the user wrote it."""
    given = [shown for name, shown in names.items()
             if ctx.params.get(name) not in (None, (), False)
             and ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE]
    if given:
        listed = given[0] if len(given) == 1 else ", ".join(given[:-1]) + " and " + given[-1]
        raise BadInput(f"{why}; drop {listed}")
