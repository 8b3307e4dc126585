"""xdna-runlist-harness: reproduce and bisect XRT runlist failures on AMD XDNA 2 NPUs."""

__version__ = "0.1.0"

# The command line as the user typed it, set by the CLI when it parses one (in-process
# callers such as tests leave sys.argv describing their own process); reports keep it.
invoked_as: list[str] | None = None


def command_argv() -> list[str]:
    import sys
    return list(invoked_as) if invoked_as is not None else list(sys.argv)


def record_as(given: str, recorded: str) -> None:
    """Keep `recorded` in the command line a report keeps where the user typed `given` (an
    option's value the harness normalised before recording it: `--url X` and `--url=X`)."""
    global invoked_as
    if invoked_as is None or given == recorded:
        return
    invoked_as = [recorded if item == given else
                  item.replace("=" + given, "=" + recorded, 1) if item.endswith("=" + given)
                  else item for item in invoked_as]
