"""The one-line summary under a reply, from its saved stats dict. Plain Python."""

from __future__ import annotations

from specchat.engine.summary import k_text, speculation_text, stop_text

EARLY_STOP_WHY = "the drafter was unsure, so the round verified what it had instead of drafting further"
MODE_NAMES = {
    "baseline": "Off",
    "draft": "Draft model",
    "mtp": "MTP",
    "lookup": "Prompt lookup",
    "dflash": "DFlash",
    "auto": "Auto",
}
FOOTER_TOOLTIP = (
    "tokens: tokens in this reply · tok/s: tokens after the first divided by the time from the end of prompt "
    "processing to the last token (the engine's clock) · TTFT: time from sending to the first token, with its "
    "parts when long: waiting in the queue, reading the prompt, then the first token · "
    "accepted: share of drafted tokens the target agreed with (— when nothing was drafted) · "
    "plain decoding share: tokens auto K produced without drafting · then why the reply stopped · drafts "
    f"stopped early (Auto K): {EARLY_STOP_WHY}; the confidence is the drafter's top-1 probability where it "
    "stopped (the median over those rounds)."
)

__all__ = ["MODE_NAMES", "FOOTER_TOOLTIP", "footer_text", "error_stats", "k_text", "early_stop_text"]
INTERRUPTED = "interrupted"
QUEUE_NOTE_S = 0.5  # a time to first token this long is said with its parts (queue, prompt, first token)
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
    parts += [part for part in (stop_text(stats, cancelled), early_stops_text(stats)) if part]
    return " · ".join(parts)


def early_stop_text(stops: int, rounds: int, confidence: float | None) -> str:
    """'drafts stopped early in 12 of 30 rounds (at confidence 0.41)'; '' when no round stopped early."""
    if stops <= 0:
        return ""
    rounds = max(rounds, stops)
    if rounds == 1:
        where = "the only round"
    elif stops == rounds:
        where = f"all {rounds} rounds"
    else:
        where = f"{stops} of {rounds} rounds"
    at = f" (at confidence {confidence:.2f})" if confidence is not None else ""
    return f"drafts stopped early in {where}{at}"


def early_stops_text(stats: dict) -> str:
    """How often an auto K reply's drafting stopped early, from its stats dict ('' for fixed K or plain)."""
    if not stats.get("auto_k") or stats.get("mode", "baseline") == "baseline":
        return ""
    rounds = sum((stats.get("k_rounds") or {}).values()) or stats.get("rounds", 0)
    return early_stop_text(stats.get("early_stops") or 0, rounds, stats.get("median_stop_confidence"))


def ttft_parts(stats: dict) -> tuple[float, list[tuple[str, float]]]:
    """The time to first token and its parts: the wait in the queue (from Send to the engine's start, known
    when the app timed the reply), reading the prompt (prefill) and the first token after it."""
    engine_ttft = float(stats.get("ttft_s") or 0.0)
    total = float(stats.get("ttft_from_send_s", engine_ttft) or 0.0)
    prompt = float(stats.get("prefill_s") or 0.0)
    first = float(stats.get("first_token_s", max(engine_ttft - prompt, 0.0)) or 0.0)
    parts = []
    if "ttft_from_send_s" in stats:  # everything before the engine began this reply
        parts.append(("queue", float(stats.get("queue_s", max(total - prompt - first, 0.0)))))
    parts += [("prompt", prompt), ("first token", first)]
    return total, parts


def ttft_text(stats: dict) -> str:
    """'TTFT 0.31 s', counted from Send when the app measured it; a longer one with its parts:
    'TTFT 33.1 s (queue 0.0 s, prompt 31.1 s, first token 2.0 s)' (the queue always, when the app timed it:
    it says whether anything waited; the others only when not zero)."""
    total, parts = ttft_parts(stats)
    if total < QUEUE_NOTE_S:
        return f"TTFT {total:.2f} s"
    shown = [f"{name} {seconds:.1f} s" for name, seconds in parts if name == "queue" or round(seconds, 1) > 0]
    return f"TTFT {total:.1f} s" + (f" ({', '.join(shown)})" if shown else "")


def interrupted_stats() -> dict:
    """The stats dict saved with a reply cut short by closing the window (its footer says so)."""
    return {"stop_reason": INTERRUPTED}


def error_stats(message: str) -> dict:
    """The stats dict saved with a reply that ended on an error (its footer says 'error: …')."""
    return {"stop_reason": "error", "error": message}
