"""Which run failed, as far as the device said: a report names a failing run only where
the driver reported which one.

XRT takes `error_index + 24 x chain` as a failed runlist's failing run. On a timeout the
firmware leaves the chain's read index at 0 (amd/xdna-driver test/shim_test/io_test.cpp;
STACK.md 4) and mainline writes error_index 0 outright, so XRT's "failing run" is then
only the first run of the chain that hung: the console, the render and the report say
"chain 1 (runs 24-41); the device does not say which run hung" instead, with why for the
driver flavour and kernel that answered.
"""

from __future__ import annotations

from typing import Any

from harness.model.drivers import FLAVOURS, DriverBuild, driver_build
from harness.model.ert import run_named
from harness.report.header import ReportHeader

NOT_SAID = "the device does not say which run hung"
NEVER_RUN = "the driver never ran it (left NEW)"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def chain_runs(outcome: dict[str, Any]) -> tuple[int, int] | None:
    """The first and last run of the outcome's failing chain; None when unknown."""
    chain, chains = _int(outcome.get("failing_chain")), outcome.get("chains")
    if chain is None or not isinstance(chains, list) or chain >= len(chains) \
            or not all(_int(c) for c in chains):
        return None
    first = sum(chains[:chain])
    return first, first + chains[chain] - 1


def unnamed(outcome: dict[str, Any]) -> bool:
    """Whether only the chain is known: as the run recorded it, or, for a report written
    before it was, as the state and index say."""
    named = outcome.get("failing_run_named")
    if isinstance(named, bool):
        return not named
    run, chains = _int(outcome.get("failing_run")), outcome.get("chains")
    if run is None or not isinstance(chains, list) or not chains or _int(chains[0]) is None:
        return False
    # the submit size is the first chain's length unless the runlist fit in one chain
    size = chains[0] if len(chains) > 1 else run + 1
    return not run_named(str(outcome.get("state")), run, max(1, size))


def chain_text(outcome: dict[str, Any]) -> str:
    """``chain 1 (runs 24-41)``."""
    span = chain_runs(outcome)
    chain = outcome.get("failing_chain")
    if span is None:
        return f"chain {chain}"
    first, last = span
    return f"chain {chain} (run{'s' if last > first else ''} {first}" \
        + (f"-{last})" if last > first else ")")


def where_text(outcome: dict[str, Any], model: str = "") -> str:
    """Where a failed runlist failed, naming a run only where the device did:
    ``chain 1 (runs 24-41) TIMEOUT from the device; the device does not say which run
    hung`` or ``failing run 30 (chain 1) ERROR from the device``. `model`: the word a
    model's answer carries (`harness.report.model.model_word`)."""
    state = outcome.get("state")
    # a simulated or emulated run's answer says so wherever it is copied to
    source = (f" from the {model + ' ' if model else ''}{outcome['source']}"
              if outcome.get("source") else "")
    if unnamed(outcome):
        return f"{chain_text(outcome)} {state}{source}; " \
            + (NEVER_RUN if state == "NEW" else NOT_SAID)
    return f"failing run {outcome.get('failing_run')} (chain {outcome.get('failing_chain')}) " \
        f"{state}{source}"


def run_cells(outcome: dict[str, Any]) -> tuple[str, str]:
    """The failing-run and chain cells of a render's table."""
    run, chain = outcome.get("failing_run"), outcome.get("failing_chain")
    if run is None:
        return "-", "-" if chain is None else str(chain)
    if unnamed(outcome):
        said = "never run" if outcome.get("state") == "NEW" else "not said"
        return f"{said} (XRT: {run}, the chain's first)", chain_text(outcome)[len("chain "):]
    return str(run), "-" if chain is None else str(chain)


READ_INDEX_0 = ("the firmware leaves the chain's read index at 0 on a timeout (amd/"
                "xdna-driver test/shim_test/io_test.cpp)")
FIRST_RUN = "so XRT's failing run is the first run of the chain"


def why_unnamed(flavour: str | None, kernel: str | None) -> str:
    """Why the device named no run, for the driver flavour and kernel that answered: what
    their build does with error_index on a timeout."""
    on = f"{flavour} on Linux {kernel}" if flavour and kernel else (flavour or "this driver")
    build = _build(flavour, kernel)
    if build is None:
        return f"{on}: {READ_INDEX_0}, {FIRST_RUN}"
    if build.timeout_index == "run_list_id":
        return f"{on} {build.timeout_index_why}, and {READ_INDEX_0}, {FIRST_RUN}"
    return f"{on} {build.timeout_index_why}, {FIRST_RUN}"


def _build(flavour: str | None, kernel: str | None) -> DriverBuild | None:
    """The modelled build of a flavour the harness knows, on `kernel` where it is one the
    model has (else the default kernel's); None for an unknown flavour."""
    if flavour not in FLAVOURS:
        return None
    try:
        return driver_build(flavour, kernel or "")
    except ValueError:
        return driver_build(flavour)


def answering_driver(header: ReportHeader) -> tuple[str | None, str | None]:
    """The driver flavour and kernel that answered a report's runs: the simulated build, or
    the machine's (its kernel as major.minor)."""
    modelled = header.backend.driver
    if modelled is not None:
        return modelled.flavour, modelled.kernel
    env = header.environment
    flavour = env.driver.flavour
    release = str(env.system.kernel or "")
    kernel = ".".join(release.split("-")[0].split(".")[:2]) or None
    return (str(flavour) if flavour else None), kernel
