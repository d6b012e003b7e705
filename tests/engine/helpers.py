"""Shared helpers for engine tests."""

from __future__ import annotations

import mlx.core as mx
from mlx_lm.generate import generate_step

from app.engine import Engine, GenerationConfig

PROMPT = "def fibonacci(n):\n    "


def prompt_ids(engine: Engine, text: str = PROMPT) -> list[int]:
    """Raw (no chat template) prompt ids."""
    return list(engine.tokenizer.encode(text))


def mlx_lm_greedy(engine: Engine, ids: list[int], n: int) -> list[int]:
    """mlx-lm's own generate_step output, cut at the first stop token."""
    out = []
    for token, _ in generate_step(mx.array(ids), engine.target.model, max_tokens=n):
        if token in engine.tokenizer.eos_token_ids:
            break
        out.append(token)
    return out


def greedy(mode: str = "baseline", k: int = 4, n: int = 40, **kw) -> GenerationConfig:
    """A greedy config."""
    return GenerationConfig(mode=mode, num_draft_tokens=k, max_tokens=n, **kw)
