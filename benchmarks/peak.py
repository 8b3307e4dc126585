"""What a benchmark's child process costs: its wall time and its own peak memory.

The peak is the child's VmHWM (its own image's high-water mark), printed by the child
as it exits: `ru_maxrss` of a child counts the memory its parent had when it forked
(Linux keeps it across exec), so a benchmark that built a big file first would see it.
"""

from __future__ import annotations

import subprocess
import sys
import time

# prints "PEAK <bytes>" on stderr when the interpreter exits, however the program ends
REPORT_PEAK = """
import atexit, os, sys
def _peak():
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
def _say():
    sys.stderr.write(f"\\nPEAK {_peak()}\\n")
    sys.stderr.flush()
atexit.register(_say)
_exit = os._exit
def _exit_saying(code):
    _say()
    _exit(code)
os._exit = _exit_saying
"""


def harness_run(args: list[str], **kwargs) -> tuple[float, int, subprocess.CompletedProcess]:
    """Run `python -m harness ARGS`; (wall seconds, peak bytes of that process, result)."""
    code = REPORT_PEAK + "import runpy, sys\nsys.argv = ['runlist-harness', *sys.argv[1:]]\n" \
        "runpy.run_module('harness', run_name='__main__')\n"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          **kwargs)
    wall = time.perf_counter() - started
    peaks = [int(line.split()[1]) for line in done.stderr.splitlines()
             if line.startswith("PEAK ")]
    return wall, max(peaks) if peaks else 0, done


def bare_peak() -> int:
    """A bare interpreter's own peak, as `harness_run` measures it."""
    done = subprocess.run([sys.executable, "-c", REPORT_PEAK], capture_output=True, text=True,
                          check=True)
    return int(done.stderr.split("PEAK ")[1])
