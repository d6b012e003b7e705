"""Draft sources for the speculative loop: propose k tokens, then learn what was kept."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import mlx.core as mx

from .runner import ModelRunner
from .sampling import Sampler

CATCH_UP_IN_ROUND = 32  # a draft further behind (after plain bursts) is prefilled first


@dataclass
class Draft:
    """Proposed tokens (lazy, shape (k,)) and, when sampling, the probabilities they came from (k, V)."""

    tokens: mx.array
    probs: mx.array | None

    @classmethod
    def from_steps(cls, tokens: list[mx.array], probs: Sequence[mx.array | None], sampler: Sampler) -> Draft:
        """A draft from per-step tokens and probabilities (the probabilities only when sampling: None when greedy)."""
        stacked = None if sampler.greedy else mx.stack([p for p in probs if p is not None])
        return cls(mx.stack(tokens).reshape(-1), stacked)


class Drafter(Protocol):
    """What the speculative loop needs from a draft source."""

    name: str

    def prefill_steps(self, seq: list[int]) -> Iterator[tuple[int, int]]:
        """Process the prompt ahead of the first round, a chunk at a time: (done, total) after each."""

    def propose(self, seq: list[int], k: int, sampler: Sampler) -> Draft:
        """Guess the next k tokens after seq."""

    def commit(self, seq: list[int]) -> None:
        """The round ended with seq; drop whatever the drafter holds beyond it."""

    def reset(self) -> None:
        """Forget all state (after an error)."""


class DraftModelDrafter:
    """A smaller model with the same vocabulary drafts autoregressively."""

    name = "draft"

    def __init__(self, runner: ModelRunner):
        self.runner = runner

    def prefill_steps(self, seq: list[int]) -> Iterator[tuple[int, int]]:
        """Prefill the draft model's caches with all but the last token, a chunk at a time."""
        yield from self.runner.prepare_steps(seq)

    def unseen(self, seq: list[int]) -> int:
        """Tokens of seq the draft model has not taken in yet (its next proposal catches up on them)."""
        return max(len(seq) - len(self.runner.tokens), 0)

    def propose(self, seq: list[int], k: int, sampler: Sampler) -> Draft:
        """Run the draft model k steps; tokens stay lazy until the target verifies them."""
        # What the draft has not seen yet (usually the last draft after a full accept, plus the
        # target's token) goes into its first step, as one call.
        feed = mx.array(self.runner.prepare(seq, leave=CATCH_UP_IN_ROUND), dtype=mx.uint32)
        self.runner.begin()
        tokens, probs = [], []
        for i in range(k):
            logits = self.runner.forward(feed)[-1]
            token, p = sampler.pick(logits)
            tokens.append(token)
            probs.append(p)
            if i < k - 1:
                feed = token.reshape(1)
                mx.async_eval(feed)
        return Draft.from_steps(tokens, probs, sampler)

    def commit(self, seq: list[int]) -> None:
        """Roll the draft caches back to the part of seq they agree with."""
        self.runner.commit(seq)

    def reset(self) -> None:
        """Drop the draft model's caches."""
        self.runner.reset()
