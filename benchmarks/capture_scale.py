"""Whether captures stay linear and small: reading a capture and picking its deepest frame,
for a small and a ten-times-larger capture of the same shape, measured in this run.

A capture of F frames, each of R runs (one hardware context, data dumped every tenth
frame), is written as XRT's capture.cpp writes it: nlohmann::json sorts every object's
keys, so the file reads `execution` (frames before threads), `ini`, `resources`
(buffers, hwctxs, kernels, runs), `version` (without XRT's two-space indentation, which
would take the 1M-run file past the 256 MiB the harness reads). It is read the way
`capture import`, `capture show` and `run FOLDER` read it (`load_capture` +
`frame(None)`, the deepest runlist). Figures: wall time and peak memory for 1,000 x 100
runs (the 100k-run baseline) and 10,000 x 100 runs (1M runs), and the 1M-run capture
again in the order the harness's tests used to write (version, resources, execution) for
comparison; the three read in alternation, round after round, min / median / max over
the rounds, the time ratio taken round by round. Targets: the larger within 3x of 10x
the baseline (linear), and its peak memory within 2x the size of its replay.json.

Usage: python benchmarks/capture_scale.py [--rounds N] [--quick]   (--quick: 10 and 100
frames, to check that it runs)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from figures import MIN_ROUNDS, alternate, ratios, spread
from peak import REPORT_PEAK, bare_peak

READ = REPORT_PEAK + """
import sys, time
from harness.sources.capture import load_capture
start = time.perf_counter()
capture = load_capture(sys.argv[1])
deepest = capture.frame(None)
elapsed = time.perf_counter() - start
print(elapsed, deepest.depth)
"""


def write_capture(folder: Path, frames: int, runs_per_frame: int, xrt_order: bool = True
                  ) -> int:
    """replay.json of `frames` frames of `runs_per_frame` runs, in XRT's key order (or
    the old one); returns its size."""
    from harness.formats.elf_writer import control_code_elf
    from harness.formats.txn import nop_stream
    from harness.formats.xclbin_writer import flm_spec, synthesize
    folder.mkdir(parents=True)
    (folder / "capture_0.bin").write_bytes(synthesize(flm_spec("Bench/layer")))
    (folder / "capture_1.bin").write_bytes(control_code_elf(nop_stream(8)))
    (folder / "capture_2.bin").write_bytes(bytes(4096))
    buffers = [{"name": f"bo_{i}", "size": 4096, "type": "inout"} for i in range(4)]
    runs, frame_list = [], []
    for f in range(frames):
        names = []
        for r in range(runs_per_frame):
            name = f"run_{f * runs_per_frame + r}"
            runs.append({"name": name, "kernel": "kernel_0",
                         "arguments": [{"argidx": 3 + i, "bo": f"bo_{i}"} for i in range(4)]})
            names.append(name)
        members = [{"run": n, "arguments": []} for n in names]
        if f % 10 == 0:
            members[0]["arguments"] = [{"argidx": 3, "bo": "bo_0", "fnm": "capture_2.bin"}]
        frame_list.append({"name": f"frame_{f}", "tid": "1", "runs": members,
                           "waits": [f"frame_{f}"]})
    document = {"version": "1.0",
                "resources": {"hwctxs": [{"name": "hwctx_0", "cfg": {},
                                          "xclbin": "capture_0.bin"}],
                              "buffers": buffers,
                              "kernels": [{"name": "kernel_0", "instance": "MLIR_AIE",
                                           "hwctx": "hwctx_0", "ctrlcode": "capture_1.bin"}],
                              "runs": runs},
                "execution": {"threads": ["1"], "frames": frame_list},
                "ini": {"Runtime.verbosity": "4"}}
    # capture.cpp writes `ostr << std::setw(2) << recipe`: nlohmann::json's keys sorted,
    # two-space indented. The key order is XRT's; the indentation is left out, which would
    # take the 1M-run file past the 256 MiB a replay.json may have here.
    text = json.dumps(document, sort_keys=xrt_order, separators=(",", ":"))
    (folder / "replay.json").write_text(text)
    return len(text)


def measure(folder: Path) -> tuple[float, int, int]:
    """(seconds, peak bytes, deepest frame's depth) of reading the capture in a child."""
    done = subprocess.run([sys.executable, "-c", READ, str(folder)], capture_output=True,
                          text=True, check=True)
    seconds, depth = done.stdout.split()
    return float(seconds), int(done.stderr.split("PEAK ")[1]), int(depth)


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--rounds", type=int, default=MIN_ROUNDS, help="alternating rounds")
    parser.add_argument("--quick", action="store_true",
                        help="10 and 100 frames: check that it runs")
    args = parser.parse_args()
    small, large = (10, 100) if args.quick else (1_000, 10_000)
    runs = 100
    kinds = ((small, True), (large, True), (large, False))
    with tempfile.TemporaryDirectory() as tmp:
        base = bare_peak()
        folders, sizes, depths, peaks = {}, {}, {}, {}
        for frames, xrt_order in kinds:
            folder = folders[frames, xrt_order] = \
                Path(tmp) / f"c{frames}{'' if xrt_order else '-old'}"
            sizes[frames, xrt_order] = write_capture(folder, frames, runs, xrt_order)

        def read(kind: tuple[int, bool]) -> float:
            seconds, peak, depth = measure(folders[kind])
            peaks.setdefault(kind, []).append(peak - base)
            depths[kind] = depth
            return seconds
        times = dict(zip(kinds, alternate([lambda kind=kind: read(kind) for kind in kinds],
                                          args.rounds), strict=True))
    print(f"reading a capture, {len(times[kinds[0]])} alternating rounds, this run "
          "(min / median / max):")
    for kind in kinds:
        frames, xrt_order = kind
        order = "XRT's key order" if xrt_order else "the old test order"
        print(f"  {frames:>6,} frames x {runs} runs ({frames * runs:,} runs, replay.json "
              f"{sizes[kind] / 1e6:.1f} MB, {order}): {spread(times[kind])} s, peak memory "
              f"above a bare interpreter {spread([p / 2**20 for p in peaks[kind]], '.0f')} "
              f"MiB, {spread([p / sizes[kind] for p in peaks[kind]])}x the JSON (deepest "
              f"frame {depths[kind]} runs)")
    ratio = ratios(times[large, True], times[small, True])
    memory = [p / sizes[large, True] for p in peaks[large, True]]
    print(f"  time ratio {spread(ratio, '.1f')}x for 10x the frames (target <= 30x: linear "
          "within 3x)")
    print(f"  memory of the {large * runs:,}-run capture in XRT's order {spread(memory)}x its "
          "JSON (target <= 2x)")


if __name__ == "__main__":
    main()
