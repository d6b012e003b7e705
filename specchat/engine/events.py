"""Frozen events that the engine yields while it generates; the UI only renders them."""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import ErrorKind
from .logprobs import TokenLogprob


@dataclass(frozen=True)
class GenerationStats:
    """Figures for one generation: sizes, speeds, acceptance and peak memory."""

    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    generated_tokens: int = 0
    ttft_s: float = 0.0
    prefill_tokens_per_s: float = 0.0
    decode_tokens_per_s: float = 0.0
    rounds: int = 0
    drafted: int = 0
    accepted: int = 0
    acceptance_rate: float = 0.0
    mean_accepted_per_round: float = 0.0
    peak_memory_bytes: int = 0
    mode: str = "baseline"
    num_draft_tokens: int = 0  # K, or the largest K when auto_k
    auto_k: bool = False
    mean_k: float = 0.0  # mean K used per round
    prefill_s: float = 0.0
    decode_s: float = 0.0
    stop_reason: str = ""  # "eos" (end of turn), "length" (max_tokens), "cancelled" (stopped by the user)
    max_tokens: int = 0  # the reply's token limit (names the number when stop_reason is "length")
    plain_tokens: int = 0  # tokens from plain decoding: the whole reply when mode is baseline, else auto K's K=0 bursts
    speculative_tokens: int = 0  # tokens emitted by rounds that drafted (K >= 1)
    k_rounds: dict[int, int] = field(default_factory=dict)  # K -> number of rounds that drafted with it (K >= 1)
    sampling: str = "greedy"  # the sampling settings, e.g. "greedy" or "T=0.7 top_p=0.9"
    early_stops: int = 0  # auto K rounds whose drafting stopped before its longest K: the drafter was unsure
    median_stop_confidence: float | None = None  # the drafter's confidence where those rounds stopped
    # acceptance by the drafter's confidence, auto K only: (the tenth's lower edge, accepted, verified drafts)
    confidence_acceptance: tuple[tuple[float, int, int], ...] = ()
    # the rows decoded together while this generation ran in a batch (0: it ran alone, not in a batch)
    batch_rows_max: int = 0  # the most rows in one of its rounds
    batch_rows_mean: float = 0.0  # the mean rows per round over its rounds
    # Auto (the drafter picked each round): drafter -> (rounds it drafted, tokens those rounds emitted)
    drafter_rounds: dict[str, tuple[int, int]] = field(default_factory=dict)
    # the parts of ttft_s: prefill_s (reading the prompt), then this, from the end of prefill to the first token
    first_token_s: float = 0.0


@dataclass(frozen=True)
class TextChunk:
    """New text and the tokens behind it; from_draft[i] is True when token i was a draft the target accepted.
    logprobs[i] belongs to token_ids[i] when the config asked for logprobs (empty otherwise)."""

    text: str
    token_ids: tuple[int, ...]
    from_draft: tuple[bool, ...]
    logprobs: tuple[TokenLogprob, ...] = ()


@dataclass(frozen=True)
class Rejection:
    """A drafted token the target refused, and the token the target chose instead."""

    position: int
    proposed: int
    chosen: int


@dataclass(frozen=True)
class RoundResult:
    """One speculative round: how many tokens were drafted and accepted, and where the time went."""

    index: int
    num_draft_tokens: int  # the K used this round (auto K may pick 0: a plain decoding round)
    drafted: int
    accepted: int
    emitted: int
    draft_s: float
    verify_s: float
    rejection: Rejection | None = None
    stopped_early: bool = False  # drafting stopped before K because the drafter was unsure
    stop_confidence: float | None = None  # the drafter's confidence in the token where it stopped
    confidences: tuple[float, ...] = ()  # the drafter's confidence in each drafted token (auto K only)
    drafter: str = ""  # which drafter drafted this round, in the Auto mode ("draft", "lookup", "mtp")


@dataclass(frozen=True)
class PrefillProgress:
    """Prompt processing progress: tokens done out of total, by the target or then by the drafter."""

    done: int
    total: int
    model: str = "target"  # "target", then "draft" while the draft model (or the MTP head) reads the prompt


@dataclass(frozen=True)
class Finished:
    """The end of a generation: every token, the full text and the stats."""

    tokens: tuple[int, ...]
    text: str
    stats: GenerationStats
    cancelled: bool = False


@dataclass(frozen=True)
class Failed:
    """A generation that stopped on an error; the message is meant for the user, the kind says whose fault."""

    message: str
    kind: ErrorKind
    partial_tokens: tuple[int, ...] = field(default_factory=tuple)


Event = TextChunk | RoundResult | PrefillProgress | Finished | Failed
