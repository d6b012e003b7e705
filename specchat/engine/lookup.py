"""Prompt-lookup drafting: propose what followed the last earlier match of the recent tokens."""

from __future__ import annotations

from collections.abc import Iterator

import mlx.core as mx

from .drafters import Draft
from .sampling import Sampler


def find_continuation(seq: list[int], k: int, ngram_max: int = 4, ngram_min: int = 1) -> list[int]:
    """Up to k tokens that followed the most recent earlier occurrence of seq's longest matching tail."""
    for n in range(min(ngram_max, len(seq) - 1), ngram_min - 1, -1):
        tail = seq[-n:]
        for start in range(len(seq) - n - 1, -1, -1):
            if seq[start : start + n] == tail:
                return seq[start + n : start + n + k]
    return []


class PromptLookupDrafter:
    """A drafter with no model: it copies from the conversation itself (prompt and reply so far)."""

    name = "lookup"

    def __init__(self, vocab_size: int, ngram_max: int = 4):
        self.vocab_size = vocab_size
        self.ngram_max = ngram_max

    def prefill_steps(self, seq: list[int]) -> Iterator[tuple[int, int]]:
        """Nothing to prefill."""
        yield from ()

    def propose(self, seq: list[int], k: int, sampler: Sampler) -> Draft:
        """The continuation of the last match; a deterministic proposal has one-hot probabilities."""
        tokens = find_continuation(seq, k, self.ngram_max)
        ids = mx.array(tokens, dtype=mx.uint32)
        if sampler.greedy:
            return Draft(ids, None)
        probs = mx.zeros((len(tokens), self.vocab_size))
        if tokens:
            probs[mx.arange(len(tokens)), ids] = 1.0
        return Draft(ids, probs)

    def commit(self, seq: list[int]) -> None:
        """Nothing to roll back."""

    def reset(self) -> None:
        """Nothing to forget."""
