"""`runlist-harness bisect` and `sweep`: the commands and their options. What a search
does is `harness.app.cli.search_run`, imported when a command runs, so that `--help`
loads none of it."""

from __future__ import annotations

import click

from harness.app.cli.options import (
    RunRequest,
    allow_different_machine_option,
    frame_option,
    run_request_options,
)
from harness.app.entry import ModulesLoading
from harness.model.plan import MAX_LAYERS
from harness.search.boundary import FLAKY_CHOICES

MAX_TRIALS = 2**31 - 1        # a budget past any search: past it is a typing slip


@click.command()
@click.argument("case_ref", metavar="CASE", required=False)
@click.option("--lo", type=click.IntRange(1, MAX_LAYERS), help="A depth (or chunk size) believed "
              "to complete; the search starts above it.")
@click.option("--hi", type=click.IntRange(1, MAX_LAYERS), help="A depth (or chunk size) believed "
              "to fail; the search ends there.")
@click.option("--chunk", "chunk_spec", default=None,
              help="Cut every tested depth this way: a chunk size (21) or even:K / max:N. "
                   "Default: one runlist.")
@click.option("--chunks-at", "chunks_at", type=click.IntRange(1, MAX_LAYERS), default=None,
              help="The other direction: at this fixed depth, find the largest chunk size "
                   "that completes (--lo/--hi then bound the chunk size; default 1..DEPTH).")
@click.option("--flaky-as", type=click.Choice([str(c) for c in FLAKY_CHOICES]), default="good",
              show_default=True,
              help="How a depth with mixed outcomes counts: good (it can complete; find the "
                   "first depth that never does), bad (find the first that ever fails), or "
                   "skip (as git bisect skip; the answer may become a range).")
@click.option("--max-trials", type=click.IntRange(1, MAX_TRIALS), default=None,
              help="Stop cleanly after this many trials, keeping everything.")
@click.option("--replay", "replay_path", type=click.Path(exists=True, dir_okay=False),
              help="Continue the bisect logged in this report (trials it holds are reused).")
@click.option("--rerun", is_flag=True,
              help="With --replay: run the logged bisect again from scratch, into a new "
                   "report (e.g. on another machine or firmware).")
@frame_option
@allow_different_machine_option
@run_request_options(trials_default="5 per tested depth")
def bisect(case_ref, lo, hi, chunk_spec, chunks_at, flaky_as, max_trials, replay_path, rerun,
           frame, allow_different_machine, request: RunRequest) -> int:
    """Find the smallest depth at which one runlist (or the given cut) fails.

    Bisects over depth with K trials per tested depth (default 5), classifies
    each (good / bad / flaky / skip), re-tests both neighbours of the boundary,
    and prints one line such as `first failing depth 38 (37: COMPLETED 5/5;
    38: TIMEOUT 5/5)`. Exits 0 when the search ends, whatever it found, and 5
    when --max-trials stops it first (--replay continues it).

    On a recipe or a captured frame (--frame) the depth is the prefix of its runs,
    1..its depth by default.
    """
    with ModulesLoading():
        from harness.app.cli.search_run import bisect_command
    return bisect_command(case_ref, lo, hi, chunk_spec, chunks_at, flaky_as, max_trials,
                          replay_path, rerun, frame, allow_different_machine, request)


@click.command()
@click.argument("case_ref", metavar="CASE", required=False)
@click.option("--depths", "depths_text", default=None,
              help="Depths to run: A..B, A..B:STEP or a list such as 28,36,42.")
@click.option("--frames", "frames_text", default=None,
              help="For a capture instead of --depths: frames (frame_2,frame_7 or 2,7), "
                   "'runlists' (every frame of more than one run) or 'all'; each at its "
                   "whole depth.")
@click.option("--chunks", "chunks_text", default=None,
              help="Chunk sizes (layers, or runs, per runlist), e.g. 1,8,21,24,42.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Also draw the grid as a heatmap PNG (needs the plot extra).")
@click.option("--max-trials", type=click.IntRange(1, MAX_TRIALS), default=None,
              help="Stop cleanly after this many trials, keeping everything.")
@click.option("--replay", "replay_path", type=click.Path(exists=True, dir_okay=False),
              help="Continue the stopped sweep of this report (its trials are reused).")
@click.option("--yes", is_flag=True,
              help="Run a sweep even when its estimate passes the size limits.")
@allow_different_machine_option
@run_request_options(trials_default="3 per cell")
def sweep(case_ref, depths_text, frames_text, chunks_text, plot_path, max_trials, replay_path,
          yes, allow_different_machine, request: RunRequest) -> int:
    """Run every depth x chunk-size cell, K trials each (default 3), into one report.

    On a capture, --frames makes the rows captured frames (each at its whole depth)
    instead of depths. Prints the grid of outcomes (counts where mixed); --plot
    draws it, with the source (hardware, or SIMULATED and its profile) in the
    title. The work is estimated first and refused past the limits without --yes;
    a stopped sweep (Ctrl-C, --max-trials) goes on with --replay REPORT.
    """
    with ModulesLoading():
        from harness.app.cli.search_run import sweep_command
    return sweep_command(case_ref, depths_text, frames_text, chunks_text, plot_path,
                         max_trials, replay_path, yes, allow_different_machine, request)
