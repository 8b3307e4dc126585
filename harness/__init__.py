"""xdna-runlist-harness: reproduce and bisect XRT runlist failures on AMD XDNA 2 NPUs."""

__version__ = "0.1.0"
