"""Log-probabilities of the emitted tokens under the target's distribution, built lazily in the pass's graph.

What is reported, the same with speculation on and off: log_softmax of the target's raw logits at
temperature 1 over the full vocabulary (the logits' width), not the sampler's filtered and tempered
distribution. Under a grammar it is taken after the grammar's mask (disallowed tokens at -inf, the rest
renormalised): the distribution the reply was chosen from, and -inf alternatives are left out of `top`.
A token the grammar forces is emitted without a model pass: it carries 0.0 (probability 1, nothing else
was possible) and no alternatives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import mlx.core as mx  # imported where a pass needs it: GenerationConfig's limits and the events must not load MLX

MAX_TOP_LOGPROBS = 20  # OpenAI's top_logprobs limit; GenerationConfig.logprobs is checked against it


@dataclass(frozen=True)
class TokenLogprob:
    """One emitted token, its logprob under the target there, and the likeliest tokens there (best first)."""

    token: int
    logprob: float
    top: tuple[tuple[int, float], ...] = ()  # (token id, logprob), sorted by logprob, highest first


def forced_logprobs(tokens: list[int]) -> list[TokenLogprob]:
    """Logprobs of tokens the grammar forced: 0.0 each, no alternatives (no model pass saw them)."""
    return [TokenLogprob(token, 0.0) for token in tokens]


class PassLogprobs:
    """The target's log-probabilities at each row of one pass's logits (T, V), lazy until read()."""

    def __init__(self, logits: mx.array, top: int):
        import mlx.core as mx

        x = logits.astype(mx.float32)
        self.logprobs = x - mx.logsumexp(x, axis=-1, keepdims=True)
        self.top = min(top, x.shape[-1])
        self.chosen: mx.array | None = None
        self.top_ids: mx.array | None = None
        self.top_values: mx.array | None = None
        if self.top:
            ids = mx.argpartition(-self.logprobs, kth=self.top - 1, axis=-1)[..., : self.top]
            self.top_ids, self.top_values = ids, mx.take_along_axis(self.logprobs, ids, axis=-1)

    def choose(self, tokens: mx.array) -> None:
        """Gather the tokens that will be emitted (one per row, still lazy) in the same graph as the pass."""
        import mlx.core as mx

        rows = tokens.reshape(-1, 1).astype(mx.int32)
        self.chosen = mx.take_along_axis(self.logprobs[: rows.shape[0]], rows, axis=-1)[:, 0]

    def arrays(self) -> list[mx.array]:
        """The arrays read() needs: evaluate them with the pass (or async_eval them with it)."""
        return [a for a in (self.chosen, self.top_ids, self.top_values) if a is not None]

    def read(self, tokens: list[int]) -> list[TokenLogprob]:
        """TokenLogprobs of the tokens emitted at rows 0..len(tokens)-1 (chosen by choose(), if it ran)."""
        import mlx.core as mx

        n = len(tokens)
        if not n:
            return []
        # No new device work when choose() ran: the plain loop reads a step while the next one is queued.
        chosen = self.chosen
        if chosen is None:  # the tokens became known only after the pass: one more (small) evaluation
            chosen = self.logprobs[mx.arange(n), mx.array(tokens, dtype=mx.int32)]
        mx.eval(chosen, *self.arrays())
        values = cast(list[float], chosen.tolist())[:n]
        return [TokenLogprob(t, v, top) for t, v, top in zip(tokens, values, self._tops(n))]

    def _tops(self, n: int) -> list[tuple[tuple[int, float], ...]]:
        if self.top_ids is None or self.top_values is None:
            return [()] * n
        ids = cast(list[list[int]], self.top_ids.tolist())[:n]  # rows are few: slice here, not on the device
        values = cast(list[list[float]], self.top_values.tolist())[:n]
        return [_ranked(row_ids, row_values) for row_ids, row_values in zip(ids, values)]


def _ranked(ids: list[int], values: list[float]) -> tuple[tuple[int, float], ...]:
    """(id, logprob) pairs best first (ties by id), without the tokens a grammar ruled out (-inf)."""
    pairs = [(i, v) for i, v in zip(ids, values) if not math.isinf(v)]
    return tuple(sorted(pairs, key=lambda p: (-p[1], p[0])))


def pass_arrays(lp: PassLogprobs | None) -> list[mx.array]:
    """lp.arrays(), or none when logprobs are off."""
    return [] if lp is None else lp.arrays()


def read_logprobs(lp: PassLogprobs | None, tokens: list[int]) -> list[TokenLogprob] | None:
    """lp.read(tokens), or None when logprobs are off."""
    return None if lp is None else lp.read(tokens)
