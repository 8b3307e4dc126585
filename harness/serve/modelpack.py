"""FastFlowLM model folders, read without loading weights (STACK.md 5).

- ``model.q4nx`` is a safetensors container: an 8-byte little-endian header
  length, a JSON header ``{tensor: {dtype, shape, data_offsets}}``, then data.
  The layer count is the largest ``model.layers.<i>`` + 1; the MiniCPM5 pack
  carries injected ``q_norm``/``k_norm`` tensors.
- ``config.json`` holds the model shape plus FastFlowLM's fields (``addr_qk``,
  ``addr_kv``, ``addr_l_begin_mha``, ``addr_l_end_mha``, ``addr_kk``, ``flm_version``).
- ``model_list.json`` beside the `flm` binary maps tags (``family:size``) to
  entries with ``name`` and ``size`` in bytes.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.model.errors import BadInput

MAX_HEADER = 100 * 1024 * 1024          # safetensors' own limit on the JSON header
_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")
CONFIG_FIELDS = ("architectures", "model_type", "num_hidden_layers", "hidden_size",
                 "num_attention_heads", "num_key_value_heads", "head_dim",
                 "intermediate_size", "vocab_size")
FLM_FIELDS = ("addr_qk", "addr_kv", "addr_l_begin_mha", "addr_l_end_mha", "addr_kk",
              "flm_version")


@dataclass
class Q4nx:
    path: str
    size: int
    header_bytes: int
    tensors: int
    layers: int | None
    dtypes: dict[str, int]
    qk_norm: bool
    metadata: dict[str, str] = field(default_factory=dict)


def read_q4nx(path: str | Path) -> Q4nx:
    file = Path(path)
    try:
        size = file.stat().st_size
        with file.open("rb") as handle:
            raw_length = handle.read(8)
            if len(raw_length) < 8:
                raise BadInput(f"{path}: shorter than the 8-byte safetensors header length")
            (length,) = struct.unpack("<Q", raw_length)
            if length > MAX_HEADER or 8 + length > size:
                raise BadInput(f"{path}: header length {length} at offset 0 is impossible "
                               f"for a {size}-byte file")
            header = handle.read(length)
    except OSError as err:
        raise BadInput(f"cannot read {path}: {err.strerror}") from None
    try:
        table = json.loads(header.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise BadInput(f"{path}: the JSON header (bytes 8..{8 + length}) does not parse: "
                       f"{err}") from None
    if not isinstance(table, dict):
        raise BadInput(f"{path}: the JSON header is not an object")
    metadata = table.pop("__metadata__", {}) or {}
    layers = [int(m.group(1)) for name in table if (m := _LAYER.search(name))]
    dtypes: dict[str, int] = {}
    for info in table.values():
        dtype = info.get("dtype", "?") if isinstance(info, dict) else "?"
        dtypes[dtype] = dtypes.get(dtype, 0) + 1
    qk_norm = any(name.endswith(("q_norm.weight", "k_norm.weight")) for name in table)
    return Q4nx(str(path), size, length, len(table), max(layers) + 1 if layers else None,
                dtypes, qk_norm, {str(k): str(v) for k, v in metadata.items()}
                if isinstance(metadata, dict) else {})


def read_config(path: str | Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except OSError as err:
        raise BadInput(f"cannot read {path}: {err.strerror}") from None
    except (UnicodeDecodeError, ValueError) as err:
        raise BadInput(f"{path}: not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise BadInput(f"{path}: not a JSON object")
    shape = {k: data[k] for k in CONFIG_FIELDS if k in data}
    flm = {k: data[k] for k in FLM_FIELDS if k in data}
    return {"shape": shape, "flm": flm}


def inspect_pack(folder: str | Path) -> dict[str, Any]:
    base = Path(folder)
    if not base.is_dir():
        raise BadInput(f"{folder} is not a folder")
    out: dict[str, Any] = {"folder": str(base)}
    q4nx = base / "model.q4nx"
    config = base / "config.json"
    if not q4nx.is_file() and not config.is_file():
        raise BadInput(f"{folder} has neither model.q4nx nor config.json: not a FastFlowLM "
                       "model folder")
    if q4nx.is_file():
        out["q4nx"] = read_q4nx(q4nx).__dict__
    if config.is_file():
        out["config"] = read_config(config)
    notes = []
    layers_q4nx = (out.get("q4nx") or {}).get("layers")
    layers_config = ((out.get("config") or {}).get("shape") or {}).get("num_hidden_layers")
    if layers_q4nx and layers_config and layers_q4nx != layers_config:
        notes.append(f"model.q4nx has {layers_q4nx} layers, config.json says {layers_config}")
    if (out.get("q4nx") or {}).get("qk_norm"):
        notes.append("q_norm/k_norm tensors present (Qwen3-style attention; a port of a model "
                     "without them carries injected ones)")
    out["notes"] = notes
    out["xclbins"] = sorted(p.name for p in base.glob("*.xclbin"))
    return out


def find_tag(model_list: dict[str, Any], tag: str) -> dict[str, Any] | None:
    """A tag's entry in model_list.json: `family:size`, or an entry whose name matches."""
    models = model_list.get("models") or {}
    family, _, size = tag.partition(":")
    entry = (models.get(family) or {}).get(size) if size else None
    if isinstance(entry, dict):
        return entry
    for sizes in models.values():
        for entry in (sizes or {}).values() if isinstance(sizes, dict) else []:
            if isinstance(entry, dict) and entry.get("name") in (tag, family):
                return entry
    return None


def read_model_list(path: str | Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except OSError as err:
        raise BadInput(f"cannot read {path}: {err.strerror}") from None
    except ValueError as err:
        raise BadInput(f"{path}: not valid JSON ({err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("models", {}), dict):
        raise BadInput(f"{path}: expected {{\"model_path\": ..., \"models\": {{family: "
                       "{size: entry}}}")
    return data
