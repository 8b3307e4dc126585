"""What `xclbin inspect` shows and what reports record about an xclbin."""

from __future__ import annotations

import datetime as dt
from typing import Any

from harness.formats.known import lookup, table_source
from harness.formats.xclbin import Kernel, Xclbin


def known_as(x: Xclbin) -> list[str]:
    entry = lookup(x.sha256)
    if entry is None:
        return []
    first = entry.primary_name(x.path)
    return [first] + [name for name in entry.known_as if name != first]


def identity(x: Xclbin, role: str | None = None) -> dict[str, Any]:
    """The facts a report keeps about one xclbin."""
    out: dict[str, Any] = {}
    if role is not None:
        out["role"] = role
    out.update({
        "path": x.path,
        "size": x.size,
        "sha256": x.sha256,
        "md5": x.md5,
        "uuid": x.uuid,
        "kernels": [k.name for k in x.kernels],
        "partition_columns": x.partition.column_width if x.partition else None,
        "known_as": known_as(x),
        "synthetic": x.synthetic,
    })
    return out


def summary(x: Xclbin) -> dict[str, Any]:
    """Everything `inspect --json` prints."""
    part = x.partition
    return {
        "path": x.path,
        "size": x.size,
        "sha256": x.sha256,
        "md5": x.md5,
        "uuid": x.uuid,
        "interface_uuid": x.interface_uuid,
        "vbnv": x.vbnv,
        "xclbin_version": x.version,
        "timestamp": x.timestamp,
        "synthetic": x.synthetic,
        "known_as": known_as(x),
        "kernels": [_kernel(x, k) for k in x.kernels],
        "ip_layout": [{"name": ip.name, "type": ip.type_name} for ip in x.ip_layout],
        "partition": None if part is None else {
            "name": part.name,
            "column_width": part.column_width,
            "start_columns": list(part.start_columns),
            "pdi_count": part.pdi_count,
            "pdis": [{"uuid": p.uuid, "image_size": p.image_size,
                      "cdo_groups": [g.name for g in p.cdo_groups]} for p in part.pdis],
        },
        "mem_topology": [{"index": m.index, "tag": m.tag, "used": m.used,
                          "size_kb": m.size_kb} for m in x.mem_topology],
        "sections": [{"index": s.index, "kind": s.kind_name, "name": s.name,
                      "offset": s.offset, "size": s.size} for s in x.sections],
    }


def _kernel(x: Xclbin, k: Kernel) -> dict[str, Any]:
    return {
        "name": k.name,
        "type": k.type,
        "instances": list(k.instances),
        "args": [{"index": a.index, "name": a.name, "type": a.type, "size": a.size,
                  "offset": a.offset, "address_qualifier": a.address_qualifier,
                  "group_id": x.group_id(k.name, a.index) if a.is_global else None}
                 for a in k.args],
    }


def render_text(x: Xclbin) -> str:
    names = known_as(x)
    if names:
        also = len(names) - 1
        tail = f"; also shipped as {also} other file{'s' if also > 1 else ''}" if also else ""
        lines = [f"{x.path or x.uuid}  (known as {names[0]}{tail})"]
    else:
        lines = [f"{x.path or x.uuid}  (not a FastFlowLM xclbin known to {table_source()})"]
    if x.synthetic:
        lines.append("  synthetic    yes: made by xdna-runlist-harness, not a real kernel")
    lines.append(f"  uuid         {x.uuid}")
    built = _when(x.timestamp)
    lines.append(f"  size         {x.size} bytes, xclbin {x.version}"
                 + (f", built {built}" if built else ""))
    lines.append(f"  sha256       {x.sha256}")
    lines.append(f"  md5          {x.md5}")
    if x.vbnv:
        lines.append(f"  platform     {x.vbnv}")
    part = x.partition
    if part is None:
        lines.append("  partition    none (no AIE_PARTITION section)")
    else:
        starts = ", ".join(str(c) for c in part.start_columns) or "none"
        word = "column" if len(part.start_columns) == 1 else "columns"
        lines.append(f"  partition    {part.column_width} columns at {word} {starts}, "
                     f"{part.pdi_count} PDI{'s' if part.pdi_count != 1 else ''}")
    if not x.kernels:
        lines.append("  kernels      none")
    for k in x.kernels:
        instances = ", ".join(k.instances) or "none"
        lines.append(f"  kernel       {k.name} ({k.type or 'type unknown'}), "
                     f"{len(k.args)} arguments, instance {instances}")
        width = max((len(a.name) for a in k.args), default=0)
        tags = {m.index: m.tag for m in x.mem_topology}
        for a in k.args:
            kind = "global" if a.is_global else "scalar"
            line = (f"    {a.index:>2} {a.name:<{width}}  {a.type:<9} {kind}  "
                    f"{a.size} bytes @{a.offset:#04x}")
            if a.is_global:
                group = x.group_id(k.name, a.index)
                line += f"  group {group}" + (f" ({tags[group]})" if group in tags else "")
            lines.append(line)
    lines.append(f"  sections     {len(x.sections)}")
    for s in x.sections:
        label = s.kind_name + (f" '{s.name}'" if s.name else "")
        lines.append(f"    {label:<34} {s.size:>9} bytes @{s.offset}")
    return "\n".join(lines)


def _when(timestamp: int) -> str | None:
    # xclbinutil writes seconds since the epoch; anything else is shown raw only.
    if 1_000_000_000 <= timestamp < 4_000_000_000:
        return dt.datetime.fromtimestamp(timestamp, dt.timezone.utc).strftime("%Y-%m-%d")
    return None
