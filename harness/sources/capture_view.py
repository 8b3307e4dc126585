"""What `capture show` tells about a capture: contexts (their xclbins or programs, and the
cfg each was made with), kernels and their control code, frames in order (thread, depth,
kernels, waits), the depth histogram, the chains XRT makes of each runlist, and the XRT
settings (`ini`) the application ran with."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from harness.formats.capture_origin import EMULATED, ORIGIN_FILE, SIMULATED
from harness.formats.elf import ElfError, read_elf
from harness.formats.elf_view import known_as as elf_known_as
from harness.formats.elf_view import txn_summary
from harness.formats.xclbin import XclbinError, read_xclbin
from harness.formats.xclbin_view import known_as
from harness.model.plan import cut_text
from harness.model.results import chain_split
from harness.sources.capture import Capture, Frame, depth_histogram

XRT_CHAIN = 24


def summary(capture: Capture) -> dict[str, Any]:
    """Everything `capture show --json` prints."""
    contexts = []
    for name, path in capture.hwctxs.items():
        entry: dict[str, Any] = {"name": name, "xclbin": Path(path).name}
        try:
            meta = read_xclbin(path)
            entry.update(uuid=meta.uuid, known_as=known_as(meta),
                         kernels=[k.name for k in meta.kernels],
                         columns=meta.partition.column_width if meta.partition else None)
        except XclbinError as err:
            entry["problem"] = str(err)
        entry["cfg"] = dict(capture.cfgs.get(name, {}))
        contexts.append(entry)
    for name, programs in capture.programs.items():
        contexts.append({"name": name, "programs": [Path(p).name for p in programs],
                         "cfg": dict(capture.cfgs.get(name, {}))})
    kernels = []
    for kernel in capture.kernels.values():
        entry = {"name": kernel.name, "instance": kernel.instance, "hwctx": kernel.hwctx,
                 "ctrlcode": Path(kernel.ctrlcode).name if kernel.ctrlcode else None}
        if kernel.ctrlcode:
            try:
                elf = read_elf(kernel.ctrlcode)
                txn = txn_summary(elf.control_code)
                entry.update(known_as=elf_known_as(elf), columns=txn.get("columns"),
                             ops=txn.get("ops"), problem=txn.get("problem"))
            except ElfError as err:
                entry["problem"] = str(err)
        kernels.append(entry)
    frames = [_frame(capture, f) for f in capture.frames]
    runlists = [f for f in frames if f["depth"] > 1]
    deepest = capture.frame(None)
    origin = capture.origin
    return {"folder": str(capture.folder), "written_by": origin.stack,
            **({"written_under": origin.profile} if origin.profile else {}),
            "contexts": contexts, "kernels": kernels,
            "ini": dict(capture.ini), "threads": list(capture.threads), "frames": frames,
            "depth_histogram": depth_histogram(capture),
            "runlist_frames": [f["name"] for f in runlists],
            "deepest": {"frame": deepest.name, "depth": deepest.depth,
                        "hwctx": capture.context_of(deepest),
                        "chains": chain_split(deepest.depth, XRT_CHAIN)}}


def _frame(capture: Capture, frame: Frame) -> dict[str, Any]:
    instances = Counter(capture.kernels[capture.runs[r].kernel].instance for r in frame.runs)
    contexts = sorted({capture.kernels[capture.runs[r].kernel].hwctx for r in frame.runs})
    return {"name": frame.name, "tid": frame.tid, "depth": frame.depth,
            "hwctx": contexts[0] if len(contexts) == 1 else contexts,
            "kernels": dict(instances), "waits": list(frame.waits),
            "restores": len(frame.data), "chains": chain_split(frame.depth, XRT_CHAIN)}


def render_text(capture: Capture) -> str:
    info = summary(capture)
    lines = [f"{info['folder']}: {len(info['frames'])} frames on {len(info['threads']) or 1} "
             f"thread(s), {len(info['runlist_frames'])} of them runlists",
             f"written by: {written_by(capture)}"]
    lines.append("contexts:")
    for ctx in info["contexts"]:
        cfg = ", ".join(f"{k}={v}" for k, v in sorted(ctx["cfg"].items()))
        made = f"; cfg {cfg}" if cfg else "; cfg empty"
        if "programs" in ctx:
            lines.append(f"  {ctx['name']:<10} full ELF programs {', '.join(ctx['programs'])}"
                         f"{made}")
            continue
        known = f"  (known as {ctx['known_as'][0]})" if ctx.get("known_as") else ""
        lines.append(f"  {ctx['name']:<10} {ctx['xclbin']}, {ctx.get('columns', '?')} columns, "
                     f"kernels {', '.join(ctx.get('kernels') or []) or '?'}{made}{known}")
    lines.append("kernels:")
    for kernel in info["kernels"]:
        code = kernel["ctrlcode"] or "no control code (instruction buffer in its arguments)"
        if kernel.get("ops") is not None:
            ops = kernel["ops"]
            code += f": TXN for {kernel['columns']} columns, {ops} op{'s' if ops != 1 else ''}"
        if kernel.get("known_as"):
            code += f" ({kernel['known_as']})"
        if kernel.get("problem"):
            code += f" [problem: {kernel['problem']}]"
        lines.append(f"  {kernel['name']:<10} {kernel['instance']} in {kernel['hwctx']}, {code}")
    lines.append("frames:")
    for group in _groups(info["frames"]):
        first, last = group[0], group[-1]
        names = first["name"] if len(group) == 1 else f"{first['name']}..{last['name']}"
        kernels = ", ".join(f"{n} x {k}" if n > 1 else k for k, n in first["kernels"].items())
        what = (f"runlist of {first['depth']} runs, chains {cut_text(first['chains'])}"
                if first["depth"] > 1 else "one run")
        each = f"{len(group)} frames, each " if len(group) > 1 else ""
        waits = [w for f in group for w in f["waits"] if w != f["name"]]
        lines.append(f"  {names:<22} thread {first['tid']}: {each}{what} ({kernels}) in "
                     f"{first['hwctx']}" + (f"; waits on {', '.join(waits)}" if waits else ""))
    settings = ", ".join(f"{k}={v}" for k, v in sorted(info["ini"].items()))
    lines.append(f"XRT settings it ran with (ini): {settings or 'none recorded'}")
    histogram = ", ".join(f"{depth}: {n}" for depth, n in info["depth_histogram"].items())
    lines.append(f"depths (runs per frame: frames): {histogram}")
    deepest = info["deepest"]
    depth = deepest["depth"]
    lines.append(f"deepest {'runlist' if depth > 1 else 'frame'}: {deepest['frame']}, "
                 f"{depth} run{'s' if depth != 1 else ''} in {deepest['hwctx']}; XRT submits "
                 f"it as chains {cut_text(deepest['chains'])}")
    return "\n".join(lines)


def written_by(capture: Capture) -> str:
    """Who wrote the capture, as its mark says (harness.formats.capture_origin)."""
    origin = capture.origin
    if origin.stack == SIMULATED:
        return (f"the SIMULATED stack (profile {origin.profile or '?'}; marked by "
                f"{ORIGIN_FILE}): its commands are the simulator's, not hardware evidence")
    if origin.stack == EMULATED:
        return (f"real XRT over the EMULATED device (profile {origin.profile or '?'}; marked "
                f"by {ORIGIN_FILE}): not hardware evidence")
    return f"XRT (no {ORIGIN_FILE} mark: taken as a machine's capture)"


def runlist_lines(capture: Capture) -> list[str]:
    """The runlists a capture holds, one line per run of alike frames: depth, chains,
    context (what `capture record` prints)."""
    info = summary(capture)
    lines = []
    for group in _groups([f for f in info["frames"] if f["depth"] > 1]):
        first = group[0]
        names = first["name"] if len(group) == 1 else \
            f"{first['name']}..{group[-1]['name']} ({len(group)} frames)"
        lines.append(f"{names}: {first['depth']} runs in {first['hwctx']}, chains "
                     f"{cut_text(first['chains'])}")
    return lines


def _groups(frames: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Consecutive frames alike (thread, depth, context, kernels, only waiting on
    themselves) in one line: an engine's thousands of single runs stay readable."""
    groups: list[list[dict[str, Any]]] = []
    for frame in frames:
        if groups and _alike(groups[-1][-1], frame):
            groups[-1].append(frame)
        else:
            groups.append([frame])
    return groups


def _alike(one: dict[str, Any], other: dict[str, Any]) -> bool:
    keys = ("tid", "depth", "hwctx", "kernels")
    return all(one[k] == other[k] for k in keys) and all(
        f["waits"] in ([], [f["name"]]) for f in (one, other))
