"""Shared helpers for engine tests."""

from __future__ import annotations

from collections.abc import Iterator

import mlx.core as mx
from mlx_lm.generate import generate_step, speculative_generate_step

from specchat.engine import Engine, GenerationConfig

PROMPT = "def fibonacci(n):\n    "


def prompt_ids(engine: Engine, text: str = PROMPT) -> list[int]:
    """Raw (no chat template) prompt ids."""
    return list(engine.tokenizer.encode(text))


def until_stop(steps, stop_ids) -> Iterator[int]:
    """The tokens of an mlx-lm step generator, up to (without) the first stop token."""
    for token, *_ in steps:
        if token in stop_ids:
            return
        yield token


def mlx_lm_greedy(engine: Engine, ids: list[int], n: int) -> list[int]:
    """mlx-lm's own generate_step output, cut at the first stop token."""
    steps = generate_step(mx.array(ids), engine.target.model, max_tokens=n)
    return list(until_stop(steps, engine.tokenizer.eos_token_ids))


def mlx_lm_speculative_tokens(engine: Engine, ids: list[int], k: int, n: int) -> Iterator[int]:
    """mlx-lm's speculative_generate_step on the engine's pair, token by token, up to the first stop token."""
    steps = speculative_generate_step(
        mx.array(ids), engine.target.model, engine.draft.model, num_draft_tokens=k, max_tokens=n
    )
    return until_stop(steps, engine.tokenizer.eos_token_ids)


def mlx_lm_speculative(engine: Engine, ids: list[int], k: int, n: int) -> list[int]:
    """mlx-lm's speculative_generate_step output on the engine's pair, cut at the first stop token."""
    return list(mlx_lm_speculative_tokens(engine, ids, k, n))


def greedy(mode: str = "baseline", k: int = 4, n: int = 40, **kw) -> GenerationConfig:
    """A greedy config."""
    return GenerationConfig(mode=mode, num_draft_tokens=k, max_tokens=n, **kw)
