"""The one exit-code map: what a run's trials mean as an exit status, in either convention.

The harness's own codes (`ExitCode`, in `harness.model.errors`): 0 every trial completed,
1 a trial failed on the device, 2 bad input, 3 environment not ready, 4 harness
fault (a worker crashed or missed its deadline, or an unexpected error), 5 a search
stopped at its --max-trials budget, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).

`git bisect run` wants 0 good, 1 (up to 127) bad, 125 cannot-test and above 127
abort. In that convention (`--exit-codes git-bisect`) a run that saw the failure is
bad, one where every trial completed is good, and one that could not tell (a
deadline, a crash, the environment not ready, bad input, a harness fault) is 125,
so `git bisect run` skips that commit. Interruptions keep 130/143, which abort the
bisection as a user would want.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.model.errors import ExitCode
from harness.model.results import TrialStatus

HARNESS = "harness"
GIT_BISECT = "git-bisect"
CONVENTIONS = (HARNESS, GIT_BISECT)
GIT_BISECT_SKIP = 125


def for_trials(statuses: Iterable[TrialStatus], convention: str = HARNESS) -> int:
    """The exit status of a finished run whose trials ended so."""
    seen = set(statuses)
    failed = TrialStatus.FAILED in seen
    unanswered = bool(seen & {TrialStatus.DEADLINE, TrialStatus.CRASHED})
    if convention == GIT_BISECT:
        if failed:
            return int(ExitCode.DEVICE_FAILURE)
        return GIT_BISECT_SKIP if unanswered or not seen else int(ExitCode.OK)
    if unanswered:
        return int(ExitCode.HARNESS_FAULT)
    return int(ExitCode.DEVICE_FAILURE if failed else ExitCode.OK)


def translate(code: int, convention: str) -> int:
    """A harness exit status in the requested convention."""
    if convention != GIT_BISECT:
        return code
    if code in (ExitCode.OK, ExitCode.DEVICE_FAILURE) or code > 127:
        return code
    return GIT_BISECT_SKIP
