"""The run settings: how a run runs its trials beyond its case and plans, each declared once
as a field of `RunOptions` (`run_setting`). The command line makes its options from these
declarations and a report records them, so this module is what `--help` needs of a run,
and it imports nothing of what runs one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from harness.model.errors import ReportError
from harness.model.results import FLOWS

# --backend: the hardware path, the simulated stack, or whichever this machine has
KINDS = ("auto", "xrt", "sim")


@dataclass(frozen=True)
class Setting:
    """One run setting as the command line offers it, declared once beside its field: the
    option that sets it and the command's parameter that option fills, what the parameter
    holds (`kind`, with its bounds or choices; bool: a flag), its help (`{default}` names
    the command's own fallback, `run_request_options`), the commands that take it (None:
    every command that runs trials), how the parameter's value becomes the field's
    (`from_option`) and how a refusal names the value a report holds (`shown`)."""

    option: str
    param: str
    shown: Callable[[Any], Any] = lambda value: value
    help: str = ""
    kind: type = str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] | None = None
    option_default: Any = None
    show_default: bool = False
    from_option: Callable[[Any], Any] = lambda value: value
    commands: frozenset[str] | None = None
    before: Any = None            # what a report older than the setting ran with (None: the
    # field's default)


def run_setting(option: str, param: str, shown: Callable[[Any], Any] = lambda value: value,
                **declared: Any) -> Any:
    """A `RunOptions` field that is a run setting: `declared` holds the `Setting`'s own
    fields and the dataclass field's (`default`)."""
    kwargs = {name: declared.pop(name) for name in ("default", "default_factory")
              if name in declared}
    if declared.get("kind") is bool:
        declared.setdefault("option_default", False)      # a flag not given
    return field(metadata={"setting": Setting(option, param, shown, **declared)}, **kwargs)


@dataclass
class RunOptions:
    """How a run runs its trials, beyond its case and plans. A report records them in its
    `settings` (`to_settings`); `run --resume` and the searches' `--replay` read them back
    (`from_settings`) and refuse an option that would change one (`kept_on_resume`). A
    setting is declared once, as its field here (`run_setting`): the commands' options are
    made from the declaration (`harness.app.cli.options.run_request_options`), so a new
    setting is its field and its use."""

    trials: int = run_setting(
        "--trials", "trials", kind=int, low=1, high=1000,
        help="Trials per plan (default: {default}).")
    isolate: bool = run_setting(
        "--no-isolate", "no_isolate", lambda value: "isolated" if value else "in-process",
        kind=bool, from_option=lambda no_isolate: not no_isolate, default=True,
        help="Run trials in this process: fast, but a hang cannot be cut off. Every trial is "
             "still written to the report as it starts and ends (a killed harness loses "
             "nothing).")
    deadline_s: float | None = run_setting(
        "--deadline", "deadline", lambda value: value or "the default", kind=float, low=0.1,
        default=None,
        help="Seconds before a trial's worker is killed (default: derived from the case and "
             "the driver's timeout).")
    continue_after_failure: bool = run_setting(
        "--continue-after-failure", "continue_after_failure", kind=bool, default=False,
        help="Run a trial's later runlists after one fails (default: record them as "
             "skipped).")
    seed: int = run_setting(
        "--seed", "seed", kind=int, option_default=0, show_default=True, default=0,
        help="Base seed for flaky profiles; each trial derives its own.")
    # --flow: overrides the case's (the report records the flow that ran)
    flow: str | None = run_setting(
        "--flow", "flow", choices=FLOWS, default=None,
        help="How runs get their control code: elf (FastFlowLM's: a control-code ELF, module "
             "and ext.kernel; ERT_START_NPU commands) or instr-bo (an instruction buffer, as "
             "mlir-aie and IRON; ERT_START_CU). Default: the case's.")
    redact: bool = run_setting(
        "--no-redact", "no_redact", lambda value: "redacted" if value else "not redacted",
        kind=bool, from_option=lambda no_redact: not no_redact, default=True, before=False,
        help="Write the report with this machine's host name, machine id, user, home "
             "folders, serials and addresses as they are, and print them so (default: "
             "replaced by placeholders, as `report render` and `report bundle` do: the "
             "report gets attached to public issues).")
    # On hardware, XRT's own runlist-latency test once the case failed (--no-xrt-smi-validate).
    # Not refused on continuing: --xrt-smi-validate is, for what it runs before the trials.
    xrt_smi_control: bool = True

    def to_settings(self, flow: str, worker_start: str | None) -> dict[str, Any]:
        """The report's `settings`: every option as it ran, the flow resolved (`flow_of`)
        and, for isolated trials, how workers were started."""
        out: dict[str, Any] = {}
        for item in fields(self):
            out[item.name] = flow if item.name == "flow" else getattr(self, item.name)
            if item.name == "isolate":
                out["worker_start"] = worker_start if self.isolate else None
        return out

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> RunOptions:
        """The options a report's `settings` recorded (`report check` has read them); a
        setting it does not hold (a report older than the setting) takes its default."""
        values: dict[str, Any] = {}
        for item in fields(cls):
            value = settings.get(item.name)
            setting = item.metadata.get("setting")
            if value is None and setting is not None and setting.before is not None:
                value = setting.before         # a report older than the setting
            if value is None:
                if item.default is MISSING:
                    raise ReportError(f"the report's settings lack {item.name}")
                value = item.default
            values[item.name] = _READ.get(str(item.type), _kept)(value)
        return cls(**values)

    @classmethod
    def kept_on_resume(cls) -> dict[str, tuple[str, Callable[[dict[str, Any]], Any]]]:
        """For each setting an option sets: the command's parameter, the option, and the
        value a report's `settings` hold, as a refusal names it."""
        return {setting.param: (setting.option, _naming(item.name, setting.shown))
                for item in fields(cls) if (setting := item.metadata.get("setting"))}


def _naming(name: str, shown: Callable[[Any], Any]) -> Callable[[dict[str, Any]], Any]:
    """How a refusal names the value the report's `settings` hold for setting `name`."""
    def named(settings: dict[str, Any]) -> Any:
        return shown(settings.get(name))
    return named


def _kept(value: Any) -> Any:
    return value


# a recorded value as its setting's type: a count an int, a switch a bool
_READ: dict[str, Callable[[Any], Any]] = {"int": int, "bool": bool}
