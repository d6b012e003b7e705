"""Turn logits into tokens: greedy argmax, or seeded sampling over filtered probabilities.

The filters are mlx-lm's own functions in mlx-lm's order (``make_sampler``): top-p, then min-p,
then top-k on the untempered log-probabilities, and only then the temperature. Unlike mlx-lm we
need the resulting probability vector, not just a token, because rejection sampling compares the
target's and the drafter's; both go through this same processing.
"""

from __future__ import annotations

import secrets

import mlx.core as mx

from specchat.upstream.mlx_lm import apply_min_p, apply_top_k, apply_top_p

from .config import GenerationConfig


class KeyStream:
    """Reproducible random keys: the same seed gives the same sequence of keys."""

    def __init__(self, seed: int | None):
        self.seed = secrets.randbits(31) if seed is None else seed
        self._key = mx.random.key(self.seed)

    def next(self) -> mx.array:
        """A fresh key; advances the stream."""
        self._key, key = mx.random.split(self._key)
        return key


class Sampler:
    """Greedy or filtered sampling for one GenerationConfig."""

    def __init__(self, cfg: GenerationConfig):
        self.cfg = cfg
        self.greedy = cfg.greedy
        self.keys = KeyStream(cfg.seed)

    def logprobs(self, logits: mx.array) -> mx.array:
        """Filtered, tempered, renormalised log-probabilities over the last axis (mlx-lm's order)."""
        cfg = self.cfg
        x = logits.astype(mx.float32)
        x = x - mx.logsumexp(x, axis=-1, keepdims=True)  # mlx-lm filters log-probabilities at temperature 1
        if 0.0 < cfg.top_p < 1.0:
            x = apply_top_p(x, cfg.top_p)
        if cfg.min_p != 0.0:
            x = apply_min_p(x, cfg.min_p)
        if 0 < cfg.top_k < x.shape[-1]:  # top-k at or above the vocabulary keeps every token
            x = apply_top_k(x, cfg.top_k)
        x = x * (1.0 / cfg.temperature)  # as mlx-lm's categorical_sampling scales them
        return x - mx.logsumexp(x, axis=-1, keepdims=True)

    def probs(self, logits: mx.array) -> mx.array:
        """Filtered probabilities over the last axis."""
        return mx.exp(self.logprobs(logits))

    def pick(self, logits: mx.array) -> tuple[mx.array, mx.array | None]:
        """Choose one token per row; also return the probabilities it was drawn from (None when greedy)."""
        if self.greedy:
            return mx.argmax(logits, axis=-1).astype(mx.uint32), None
        logprobs = self.logprobs(logits)
        token = mx.random.categorical(logprobs, key=self.keys.next())
        return token.astype(mx.uint32), mx.exp(logprobs)
