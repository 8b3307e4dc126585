"""Unix `ar` archives, as XRT ships its validate artefacts (`xrt_smi_*.a`): one member read
by name, GNU long names included."""

from __future__ import annotations

from pathlib import Path


def read_ar_member(archive: Path, name: str) -> bytes | None:
    """One member of a Unix `ar` archive (GNU long names included), or None."""
    data = archive.read_bytes()
    if not data.startswith(b"!<arch>\n"):
        return None
    at, long_names = 8, b""
    while at + 60 <= len(data):
        header = data[at:at + 60]
        raw_name = header[:16].decode("ascii", "replace").strip()
        try:
            size = int(header[48:58].decode("ascii").strip())
        except ValueError:
            return None
        body = data[at + 60:at + 60 + size]
        if raw_name == "//":
            long_names = body
        elif raw_name.startswith("/") and raw_name[1:].isdigit():
            start = int(raw_name[1:])
            end = long_names.find(b"/\n", start)
            raw_name = long_names[start:end].decode("utf-8", "replace")
        if raw_name.rstrip("/") == name:
            return body
        at += 60 + size + (size & 1)
    return None
