"""The one-line summary under a reply, from its saved stats dict. Plain Python."""

from __future__ import annotations

MODE_NAMES = {"baseline": "Off", "draft": "Draft model", "mtp": "MTP", "lookup": "Prompt lookup"}


def footer_text(stats: dict | None, cancelled: bool = False) -> str:
    """E.g. '42 tokens · 31.5 tok/s · TTFT 0.12 s · 68% accepted · Draft model K=4' (or 'K auto (mean 2.3)')."""
    if not stats:
        return "stopped" if cancelled else ""
    parts = [
        f"{stats.get('generated_tokens', 0)} tokens",
        f"{stats.get('decode_tokens_per_s', 0.0):.1f} tok/s",
        f"TTFT {stats.get('ttft_s', 0.0):.2f} s",
    ]
    mode = stats.get("mode", "baseline")
    if mode != "baseline":
        parts.append(f"{stats.get('acceptance_rate', 0.0):.0%} accepted")
        parts.append(f"{MODE_NAMES.get(mode, mode)} {k_text(stats)}")
    else:
        parts.append("speculation off")
    if cancelled:
        parts.append("stopped")
    return " · ".join(parts)


def k_text(stats: dict) -> str:
    """'K=4', or 'K auto (mean 2.3)' when the engine chose K each round."""
    if stats.get("auto_k"):
        return f"K auto (mean {stats.get('mean_k', 0.0):.1f})"
    return f"K={stats.get('num_draft_tokens', 0)}"
