"""The JSON documents FastFlowLM answers with: an error body and `flm validate --json`.

`flm serve` answers a failed request as ``{"error": "<what()>"}`` with HTTP 200
(ROCm/FastFlowLM `src/server/rest_handler.cpp`; STACK.md 5); an OpenAI-style body nests
it, ``{"error": {"message": ..., "type": ...}}``. `flm validate --json` writes the
checks of `sanity_check_npu_stack` (`src/src/main.cpp`): ``object:
npu_stack_validation``, ``kernel``, ``kernel_ok``, ``drm_version``, ``devices`` (each
with ``fw_major``..``fw_build``, ``fw_ok``, ``cols``), ``amd_device_found``,
``all_fw_ok``, ``enough_cols``, ``memlock_limit``, ``memlock_ok``, ``ready``. A document
is the whole file, or one a line (a server-sent ``data:`` line included).
"""

from __future__ import annotations

import json
from typing import Any

from harness.logs.error_lines import FLM_JSON, find_error_lines
from harness.report.diagnosis.artefacts.artefact_text import ArtefactText, Claim
from harness.report.diagnosis.sign_rules import signs_of_error
from harness.report.diagnosis.vocabulary import Cite, Fact, Observed, quote
from harness.report.header import section

KIND = "flm-json"
VALIDATION = "npu_stack_validation"
# validate's failed checks -> signs
_CHECKS = (("amd_device_found", "no-device"), ("all_fw_ok", "firmware-too-old"),
           ("enough_cols", "wrong-columns"), ("memlock_ok", "memlock-low"))


def parse(text: ArtefactText, free: set[int], observed: Observed) -> Claim | None:
    whole = _document("\n".join(text.lines[i] for i in sorted(free)))
    if whole is not None:
        if whole.get("object") == VALIDATION:
            return _validation(text, free, whole, observed)
        if "error" in whole:
            first = min(i for i in free if text.lines[i].strip())
            return _errors(text, free, observed, whole_at=first)
        return None
    return _errors(text, free, observed, whole_at=None)


def _document(blob: str) -> dict[str, Any] | None:
    if not blob.strip().startswith("{"):
        return None
    try:
        value = json.loads(blob)
    except ValueError:
        return None
    return section(value) or None


def _errors(text: ArtefactText, free: set[int], observed: Observed,
            whole_at: int | None) -> Claim | None:
    """Error bodies: the file as one, or one a line."""
    lines = [text.lines[i] if i in free else "" for i in range(len(text.lines))]
    if whole_at is not None:
        lines = [""] * len(lines)
        lines[whole_at] = " ".join(text.lines[i] for i in sorted(free))
    found = [e for e in find_error_lines(lines) if e.carrier == FLM_JSON]
    if not found:
        return None
    claim = Claim("FastFlowLM's JSON error body",
                  set(free) if whole_at is not None else {e.line - 1 for e in found})
    for error in found:
        cite = Cite(text.file, "line", quote(error.message), error.line)
        for kind, facts in signs_of_error(error):
            observed.sign(kind, cite, **facts)
    return claim


def _validation(text: ArtefactText, free: set[int], doc: dict[str, Any],
                observed: Observed) -> Claim:
    def cite(key: str) -> Cite:
        at = next((i for i in sorted(free) if f'"{key}"' in text.lines[i]), min(free))
        return Cite(text.file, key, quote(text.lines[at]), at + 1)
    stack = observed.stack
    stack.set("kernel", doc.get("kernel"), cite("kernel"))
    if doc.get("drm_version"):
        stack.set("driver", f"DRM {doc['drm_version']}", cite("drm_version"))
    devices = [section(d) for d in doc.get("devices") or []]
    for device in devices:
        parts = [device.get(k) for k in ("fw_major", "fw_minor", "fw_patch", "fw_build")]
        if all(isinstance(p, int) for p in parts):
            stack.set("firmware", ".".join(map(str, parts)), cite("fw_major"))
        if isinstance(device.get("cols"), int) and stack.npu is None:
            stack.npu = Fact(f"{device['cols']} columns", cite("cols"))
    for key, kind in _CHECKS:
        if doc.get(key) is False:
            observed.sign(kind, cite(key), check=key)
    if doc.get("kernel_ok") is False:
        observed.sign("exception", cite("kernel_ok"), check="kernel_ok")
    return Claim("flm validate --json", set(free))
