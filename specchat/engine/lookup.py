"""Prompt-lookup drafting: propose what followed the last earlier match of the recent tokens."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

import mlx.core as mx

from .draft_stop import RoundPlan
from .drafters import Draft, Drafter, DraftRequest

OCCURRENCES = 8  # the most recent occurrences of the tail that vote on its continuation


def find_continuation(seq: list[int], k: int, ngram_max: int = 4, ngram_min: int = 1) -> list[int]:
    """Up to k tokens that followed the most recent earlier occurrence of seq's longest matching tail."""
    return match_continuation(seq, k, ngram_max, ngram_min)[0]


def match_continuation(seq: list[int], k: int, ngram_max: int = 4, ngram_min: int = 1) -> tuple[list[int], list[float]]:
    """find_continuation's tokens, and a confidence for each: how long the matched tail is (of ngram_max)
    times the share of the tail's earlier occurrences that continue with the same tokens up to there."""
    tokens, confidences, _ = longest_match(seq, k, ngram_max, ngram_min)
    return tokens, confidences


def longest_match(seq: list[int], k: int, ngram_max: int = 4, ngram_min: int = 1) -> tuple[list[int], list[float], int]:
    """match_continuation's tokens and confidences, and the length of the tail that matched (0: no match)."""
    for n in range(min(ngram_max, len(seq) - 1), ngram_min - 1, -1):
        tail = seq[-n:]
        starts = list(islice((s for s in range(len(seq) - n - 1, -1, -1) if seq[s : s + n] == tail), OCCURRENCES))
        if starts:
            tokens = seq[starts[0] + n : starts[0] + n + k]
            return tokens, _agreement(seq, starts, n, tokens, n / ngram_max), n
    return [], [], 0


def _agreement(seq: list[int], starts: list[int], n: int, tokens: list[int], length: float) -> list[float]:
    """For each proposed token: length times the share of occurrences whose continuation agrees so far."""
    alive, out = list(starts), []
    for i, token in enumerate(tokens):
        alive = [s for s in alive if s + n + i < len(seq) and seq[s + n + i] == token]
        out.append(length * len(alive) / len(starts))
    return out


def one_hot_rows(ids: mx.array, width: int, dtype: mx.Dtype = mx.float32) -> mx.array:
    """A deterministic proposal's probabilities: one row per token, all its mass on that token."""
    rows = mx.zeros((ids.size, width), dtype=dtype)
    if ids.size:
        rows[mx.arange(ids.size), ids] = 1.0
    return rows


def _kept(plan: RoundPlan, confidences: list[float]) -> int:
    """How many of the proposed tokens the plan keeps."""
    for i, confidence in enumerate(confidences):
        keep, more = plan.take(confidence)
        if not keep:
            return i
        if not more:
            return i + 1
    return len(confidences)


class PromptLookupDrafter(Drafter):
    """A drafter with no model: it copies from the conversation itself (prompt and reply so far)."""

    name = "lookup"

    def __init__(self, vocab_size: int, ngram_max: int = 4):
        self.vocab_size = vocab_size
        self.ngram_max = ngram_max

    def prefill_steps(self, seq: list[int]) -> Iterator[tuple[int, int]]:
        """Nothing to prefill."""
        yield from ()

    def unseen(self, seq: list[int]) -> int:
        """Nothing to catch up on: it reads the sequence afresh each time."""
        return 0

    def propose(self, request: DraftRequest) -> Draft:
        """The continuation of the last match, cut at the first token the constraint forbids and where the plan
        finds the match too weak; a deterministic proposal has one-hot probabilities."""
        sampler, plan, constraint = request.sampler, request.plan, request.constraint
        tokens, confidences = match_continuation(request.seq, request.k, self.ngram_max)
        if constraint is not None:
            kept = constraint.follow(tokens)
            tokens, confidences = tokens[:kept], confidences[:kept]
        if plan is not None and plan.costs is not None:
            tokens = tokens[: _kept(plan, confidences)]
        ids = mx.array(tokens, dtype=mx.uint32)
        return Draft(ids, None if sampler.greedy else one_hot_rows(ids, self.vocab_size))

    def observe(self, seq: list[int]) -> None:
        """Nothing to roll back."""

    def reset(self) -> None:
        """Nothing to forget."""
