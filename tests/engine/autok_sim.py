"""A decode loop in numbers only: rounds of a draft model whose guesses match the target with a given
probability, at costs measured on the real Qwen2.5-Coder 1.5B/0.5B pair (float32, this CPU), with noise.

It drives AutoK exactly as speculative_steps does (choose, plain bursts, observe with catch-up), so a
controller change can be judged on a thousand rounds in a second, beside every fixed K.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

from app.engine.autok import AutoK


@dataclass(frozen=True)
class Pair:
    """Seconds per draft step, per verify pass (v0 + vs * K), per plain token and per caught-up token."""

    draft: float
    v0: float
    vs: float
    plain: float
    catch_up: float = 0.01


# from the rounds of real-pair runs (bench/real_pair.py, the trace in the issue notes)
CODE = Pair(draft=0.16, v0=0.60, vs=0.015, plain=0.55)
OPEN = Pair(draft=0.165, v0=0.47, vs=0.04, plain=0.44)


def acceptance(kind: str, position: int) -> float:
    """Chance the draft's guess at a position matches: code throughout; a story's predictable first line."""
    return {"code": 0.97, "bad": 0.25}.get(kind, 0.93 if position < 12 else 0.66)


def run(kind: str, pair: Pair, n: int, seed: int, fixed: int | None = None, auto: AutoK | None = None,
        noise: float = 0.05) -> float:
    """Tokens per second of one n-token reply at a fixed K, or with `auto` choosing."""
    matches = random.Random(seed)
    match = [matches.random() < acceptance(kind, i) for i in range(n + 20)]
    jitter = random.Random(seed + 99)
    pos, seconds, unseen = 0, 0.0, 0
    if auto is not None:
        auto.new_reply()
    while pos < n:
        k = min(fixed if auto is None else auto.choose(), n - pos)
        if k == 0:
            burst = min(auto.burst_length(), n - pos)
            cost = burst * pair.plain * (1 + jitter.gauss(0, noise))
            auto.observe_plain(burst, cost)
            seconds, pos, unseen = seconds + cost, pos + burst, unseen + burst
            continue
        accepted = 0
        while accepted < k and match[pos + accepted]:
            accepted += 1
        draft = k * pair.draft * (1 + jitter.gauss(0, noise)) + unseen * pair.catch_up
        verify = (pair.v0 + pair.vs * k) * (1 + jitter.gauss(0, noise))
        if auto is not None:
            auto.observe(k, accepted, draft, verify, catch_up=unseen + 1)
        seconds, pos, unseen = seconds + draft + verify, pos + accepted + 1, 1
    return n / seconds


def best_fixed(kind: str, pair: Pair, n: int, seeds, ks=(1, 2, 3, 4)) -> float:
    """The best fixed K's tokens per second, a mean over the seeds."""
    return max(statistics.fmean(run(kind, pair, n, s, fixed=k) for s in seeds) for k in ks)


def compare(kind: str, pair: Pair, n: int, seeds: int = 40) -> tuple[float, float]:
    """(auto / best fixed K, auto / plain decoding), each a mean over seeds, a fresh controller per reply."""
    auto = statistics.fmean(run(kind, pair, n, s, auto=AutoK(k_max=8)) for s in range(seeds))
    return auto / best_fixed(kind, pair, n, range(seeds)), auto * pair.plain
