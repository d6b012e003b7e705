"""Safetensors files checked against their own headers, so a cut-off copy is found without loading it.

A safetensors file is an 8-byte little-endian header length, a JSON header giving each tensor's
byte range in the data section, then the data. The file must end where the last range ends.
"""

from __future__ import annotations

import json
from pathlib import Path

from .units import format_bytes

HEADER_LENGTH_BYTES = 8
MAX_HEADER_BYTES = 100 * 1024 * 1024  # the safetensors format's own limit


def expected_size(path: Path) -> int:
    """The size the file's header implies; ValueError (with why) when the header cannot be read."""
    with Path(path).open("rb") as f:
        head = f.read(HEADER_LENGTH_BYTES)
        if len(head) < HEADER_LENGTH_BYTES:
            raise ValueError("too short to hold a safetensors header")
        header_len = int.from_bytes(head, "little")
        if header_len > MAX_HEADER_BYTES:
            raise ValueError(f"its header claims {header_len} bytes, not a safetensors file")
        raw = f.read(header_len)
    if len(raw) < header_len:
        raise ValueError(f"cut off inside its header ({len(raw)} of {header_len} header bytes)")
    header = json.loads(raw)
    if not isinstance(header, dict):
        raise ValueError("its header is not a JSON object")
    ends = [
        int(entry["data_offsets"][1])
        for name, entry in header.items()
        if name != "__metadata__" and isinstance(entry, dict) and "data_offsets" in entry
    ]
    return HEADER_LENGTH_BYTES + header_len + max(ends, default=0)


def safetensors_problem(path: Path) -> str | None:
    """None when the file is exactly as long as its header says; else one line naming file and bytes."""
    path = Path(path)
    try:
        size = path.stat().st_size
        expected = expected_size(path)
    except OSError as exc:
        return f"{path.name} cannot be read: {exc.strerror or exc}"
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        return f"{path.name} is broken: {exc}"
    if size < expected:
        return (
            f"{path.name} is truncated: {format_bytes(expected - size)} missing "
            f"({size} of the {expected} bytes its header lists)"
        )
    if size > expected:
        return f"{path.name} has {size - expected} bytes after its data ({size}, its header lists {expected})"
    return None


def broken_weights(folder: Path) -> list[str]:
    """A problem line for every *.safetensors file of the folder that does not match its header."""
    problems = (safetensors_problem(p) for p in sorted(Path(folder).glob("*.safetensors")))
    return [p for p in problems if p]
