"""Decide which drafted tokens the target keeps: greedy match or rejection sampling."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import mlx.core as mx

from .runner import token_id
from .sampling import Sampler


@dataclass(frozen=True)
class Verdict:
    """The outcome of verifying one draft: kept drafts plus the target's own next token."""

    tokens: list[int]
    accepted: int
    target_choice: int | None = None  # what the target put where it rejected a draft


def verify_greedy(choices: list[int], drafts: list[int]) -> Verdict:
    """Keep drafts while they equal the target's argmax choices; then add the target's token."""
    n = 0
    while n < len(drafts) and drafts[n] == choices[n]:
        n += 1
    rejected = choices[n] if n < len(drafts) else None
    return Verdict(drafts[:n] + [choices[n]], n, rejected)


def verify_sampled(target_logits: mx.array, drafts: list[int], draft_probs: mx.array, sampler: Sampler) -> Verdict:
    """Speculative sampling (Leviathan et al.): accept with min(1, p/q), else sample norm(max(0, p - q))."""
    p = sampler.probs(target_logits)
    k = len(drafts)
    if k:
        idx = mx.arange(k)
        ids = mx.array(drafts, dtype=mx.uint32)
        p_d = p[idx, ids]
        q_d = draft_probs[idx, ids]
        u = mx.random.uniform(shape=(k,), key=sampler.keys.next())
        accepted = cast(list[bool], (u * q_d < p_d).tolist())  # mlx's stubs: tolist() is any nesting
    else:
        accepted = []
    n = accepted.index(False) if False in accepted else k
    if n < k:
        residual = mx.maximum(p[n] - draft_probs[n], 0.0)
        total = residual.sum()
        dist = mx.where(total > 0, residual / mx.maximum(total, 1e-30), p[n])
    else:
        dist = p[n]
    token = token_id(mx.random.categorical(mx.log(dist), key=sampler.keys.next()))
    return Verdict(drafts[:n] + [token], n, token if n < k else None)
