"""Locked-memory limits and the FastFlowLM install (STACK.md 5)."""

from __future__ import annotations

import json
import resource
from typing import Any

from harness.probe.readers import Sources

FLM_MEMLOCK_FLOOR = 100 * 1024 * 1024     # `flm validate` raises memlock below 100 MiB


def _limit(value: int) -> int | str:
    return "unlimited" if value in (resource.RLIM_INFINITY, -1) else value


def memlock_facts(src: Sources, need_bytes: int | None = None) -> dict[str, Any]:
    limits = src.memlock()
    if limits is None:
        return {"soft": None, "hard": None, "enough": None}
    soft, hard = (_limit(v) for v in limits)
    need = max(FLM_MEMLOCK_FLOOR, need_bytes or 0)
    enough = soft == "unlimited" or (isinstance(soft, int) and soft >= need)
    return {"soft": soft, "hard": hard, "needed": need, "enough": enough}


def flm_facts(src: Sources) -> dict[str, Any]:
    binary = src.which("flm")
    if binary is None:
        return {"binary": None}
    shown = "/" + str(binary.relative_to(src.root)) if src.fake else str(binary)
    facts: dict[str, Any] = {"binary": shown}
    if src.run is not None:
        facts["version"] = src.run([str(binary), "version"])
    # in a fake tree the binary was found inside it, links and all (`Sources.path`)
    bindir = binary.parent if src.fake else binary.resolve().parent
    model_list = src.path(f"{shown.rsplit('/', 1)[0]}/model_list.json") if src.fake \
        else bindir / "model_list.json"
    if model_list.is_file():
        try:
            data = json.loads(model_list.read_text())
            models = data.get("models", {})
            facts["model_list"] = {
                "model_path": data.get("model_path"),
                "families": sorted(models),
                "models": sum(len(sizes) for sizes in models.values()
                              if isinstance(sizes, dict)),
            }
        except (OSError, ValueError, AttributeError) as err:
            facts["model_list"] = {"error": f"unreadable model_list.json: {err}"}
    folders = []
    for base in (bindir / "xclbins", bindir.parent / "share" / "flm" / "xclbins"):
        if base.is_dir():
            folders.append({"path": str(base), "packs": sorted(p.name for p in base.iterdir()
                                                               if p.is_dir())})
    facts["xclbin_folders"] = folders
    return facts
