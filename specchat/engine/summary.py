"""Words for a generation's stats dict (asdict(GenerationStats), or one saved with an older message).

Shared by the chat footer and the CLI's stats line. Older saved dicts lack the newer keys
(plain_tokens, k_rounds, max_tokens): every function copes and says less rather than something false.
"""

from __future__ import annotations

from collections.abc import Mapping

from .json_types import JSONValue

Stats = Mapping[str, JSONValue]  # asdict(GenerationStats), or a stats dict read back from JSON

NO_ACCEPTANCE = "acceptance —"
STOP_WORDS = {"eos": "end of turn", "cancelled": "stopped by you", "error": "error"}
CONTEXT_FULL = "the context is full"


def stop_text(stats: Stats | None, cancelled: bool = False) -> str:
    """Why the reply stopped: 'end of turn', 'max tokens (256)', 'the context is full', 'stopped by you' or
    'error'; '' if unknown."""
    reason = str((stats or {}).get("stop_reason") or ("cancelled" if cancelled else ""))
    if cancelled and reason != "error":
        reason = "cancelled"
    if reason == "length":
        return _length_text(stats or {})
    return STOP_WORDS.get(reason, reason)


def _length_text(stats: Stats) -> str:
    """'max tokens (256)', or 'the context is full' when the reply stopped short of max_tokens: the engine cuts a
    reply's budget to the room left in the context, so that is the only other length stop."""
    limit, generated = _number(stats, "max_tokens"), _number(stats, "generated_tokens")
    if limit and generated is not None and generated < limit:
        return CONTEXT_FULL
    return f"max tokens ({int(limit)})" if limit else "max tokens"


def acceptance_text(stats: Stats) -> str:
    """'80% of drafted tokens accepted', or 'acceptance —' when nothing was drafted (never '0%')."""
    drafted = _number(stats, "drafted")
    if drafted is None:  # a very old dict: only the rate is known
        rate = _number(stats, "acceptance_rate")
        return NO_ACCEPTANCE if rate is None else f"{rate:.0%} of drafted tokens accepted"
    if not drafted:
        return NO_ACCEPTANCE
    return f"{(_number(stats, 'accepted') or 0) / drafted:.0%} of drafted tokens accepted"


def ks_text(k_rounds: Mapping[int, int] | Mapping[str, JSONValue]) -> str:  # str keys: read back from JSON
    """The drafting Ks used: 'K=2', or 'K=1–4' when rounds used several."""
    ks = sorted(int(k) for k, n in k_rounds.items() if n)
    if not ks:
        return "K=—"
    return f"K={ks[0]}" if ks[0] == ks[-1] else f"K={ks[0]}–{ks[-1]}"


def auto_k_text(stats: Stats) -> str | None:
    """What auto K did: 'plain decoding for 92% of tokens, K=2 for the rest'; None without the counts."""
    generated, plain = _number(stats, "generated_tokens") or 0, _number(stats, "plain_tokens")
    if plain is None or not generated:
        return None
    k_rounds = _map(stats.get("k_rounds"))
    if plain >= generated:
        return "plain decoding for all tokens"
    if plain == 0:
        return f"{ks_text(k_rounds)} (mean {_number(stats, 'mean_k') or 0.0:.1f})"
    share = plain / generated
    percent = f"{share:.0%}" if 0.005 <= share <= 0.995 else f"{share:.1%}"
    return f"plain decoding for {percent} of tokens, {ks_text(k_rounds)} for the rest"


def k_text(stats: Stats) -> str:
    """'K=4', or 'K auto (mean 2.3)' when the engine chose K each round."""
    if stats.get("auto_k"):
        return f"K auto (mean {_number(stats, 'mean_k') or 0.0:.1f})"
    return f"K={stats.get('num_draft_tokens', 0)}"


def speculation_text(stats: Stats) -> str:
    """How a speculative reply drafted: 'K=4; 68% of drafted tokens accepted', or for auto K
    'K auto: plain decoding for 92% of tokens, K=2 for the rest; 80% of drafted tokens accepted'."""
    if stats.get("auto_k"):
        detail = auto_k_text(stats)
        k = f"K auto: {detail}" if detail else k_text(stats)
    else:
        k = k_text(stats)
    drafters = drafters_text(stats)
    return f"{k}; {acceptance_text(stats)}" + (f"; {drafters}" if drafters else "")


DRAFTER_WORDS = {"draft": "draft model", "lookup": "prompt lookup", "mtp": "MTP head", "dflash": "DFlash"}


def drafters_text(stats: Stats) -> str | None:
    """Which drafter took how many rounds in the Auto mode: 'draft model 21 rounds, prompt lookup 9 rounds
    (38 tokens)'; None for a reply that one drafter drafted."""
    rounds = _map(stats.get("drafter_rounds"))
    if not rounds:
        return None
    parts = []
    for name, pair in rounds.items():
        count, emitted = pair if isinstance(pair, list | tuple) else (pair, 0)
        words = f"{DRAFTER_WORDS.get(name, name)} {count} round{'' if count == 1 else 's'}"
        parts.append(words + (f" ({emitted} tokens)" if name == "lookup" else ""))
    return ", ".join(parts)


def _number(stats: Stats, key: str) -> float | None:
    """A number in the stats dict; None when it is missing or not a number."""
    value = stats.get(key)
    return value if isinstance(value, int | float) else None


def _map(value: JSONValue) -> dict[str, JSONValue]:
    """A map in the stats dict; {} when it is missing or not a map."""
    return value if isinstance(value, dict) else {}
