"""Human-readable sizes and durations."""

from __future__ import annotations


def format_bytes(n: int | float | None) -> str:
    """Decimal units: "4.6 GB", "312.5 MB", "12.0 KB", "17 B"."""
    if n is None:
        return "unknown"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def format_duration(seconds: float | None) -> str:
    """ "1h02m", "3m05s", "12s", or "--" when unknown."""
    if seconds is None:
        return "--"
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"
