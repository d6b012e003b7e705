"""The one-line summary under a reply, from its saved stats dict. Plain Python."""

from __future__ import annotations

from specchat.engine.summary import k_text, speculation_text, stop_text

MODE_NAMES = {"baseline": "Off", "draft": "Draft model", "mtp": "MTP", "lookup": "Prompt lookup"}
FOOTER_TOOLTIP = (
    "tokens: tokens in this reply · tok/s: tokens after the first divided by the time from the end of prompt "
    "processing to the last token (the engine's clock) · TTFT: time from sending to the first token · "
    "accepted: share of drafted tokens the target agreed with (— when nothing was drafted) · "
    "plain decoding share: tokens auto K produced without drafting · the last part says why the reply stopped."
)

__all__ = ["MODE_NAMES", "FOOTER_TOOLTIP", "footer_text", "error_stats", "k_text"]
INTERRUPTED = "interrupted"
QUEUE_NOTE_S = 0.5  # a queue wait this long is said in the footer
INTERRUPTED_TEXT = "interrupted: SpecChat was closed while this reply was being written"


def footer_text(stats: dict | None, cancelled: bool = False) -> str:
    """E.g. '42 tokens · 31.5 tok/s · TTFT 0.12 s · Draft model K=4; 68% of drafted tokens accepted · end of turn'."""
    if not stats:
        return "stopped by you" if cancelled else ""
    if stats.get("stop_reason") == "error" and "generated_tokens" not in stats:
        message = stats.get("error", "")
        return f"error: {message}" if message else "error"
    if stats.get("stop_reason") == INTERRUPTED:
        return INTERRUPTED_TEXT
    parts = [
        f"{stats.get('generated_tokens', 0)} tokens",
        f"{stats.get('decode_tokens_per_s', 0.0):.1f} tok/s",
        ttft_text(stats),
    ]
    mode = stats.get("mode", "baseline")
    if mode != "baseline":
        parts.append(f"{MODE_NAMES.get(mode, mode)} {speculation_text(stats)}")
    else:
        parts.append("speculation off")
    stop = stop_text(stats, cancelled)
    if stop:
        parts.append(stop)
    return " · ".join(parts)


def ttft_text(stats: dict) -> str:
    """'TTFT 0.31 s', counted from Send when the app measured it, with the queue wait when there was one."""
    ttft = stats.get("ttft_from_send_s", stats.get("ttft_s", 0.0))
    queued = stats.get("queued_s", 0.0)
    return f"TTFT {ttft:.2f} s" + (f" ({queued:.1f} s waiting in the queue)" if queued >= QUEUE_NOTE_S else "")


def interrupted_stats() -> dict:
    """The stats dict saved with a reply cut short by closing the window (its footer says so)."""
    return {"stop_reason": INTERRUPTED}


def error_stats(message: str) -> dict:
    """The stats dict saved with a reply that ended on an error (its footer says 'error: …')."""
    return {"stop_reason": "error", "error": message}
