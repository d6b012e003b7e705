"""A decode loop in numbers only: rounds of a draft model that agrees with the target where a match
sequence says so, at costs measured on the real Qwen2.5-Coder 1.5B/0.5B pair (float32, this CPU),
with noise.

Match sequences are either recorded from the real pair (tests/data/autok, written by
bench/record_draft_matches.py: the exact positions where its draft guessed right) or drawn at random
with a given chance per position. It drives AutoK exactly as speculative_steps does (choose, plain
bursts, observe with catch-up), so a controller change can be judged on a thousand rounds in a
second, beside every fixed K.
"""

from __future__ import annotations

import functools
import json
import random
import statistics
from dataclasses import dataclass
from pathlib import Path

from specchat.engine.autok import AutoK
from specchat.engine.config import AUTO_MAX_DRAFT_TOKENS
from specchat.engine.draft_stop import RoundPlan

RECORDED = Path(__file__).resolve().parents[1] / "data/autok/real_pair_matches.json"


@dataclass(frozen=True)
class Pair:
    """Seconds per draft step, per verify pass (v0 + vs * K) and per caught-up token; a plain token costs
    plain_factor one-token verify passes (v0): plain decoding overlaps a step's Python work with the
    step before it, which the controller cannot see from its verify costs. A plain burst's first token has
    no step before it to overlap with: it costs a one-token verify pass; the loop times a burst from its
    second step on, as the engine does."""

    draft: float
    v0: float
    vs: float
    plain_factor: float
    catch_up: float = 0.01

    @property
    def plain(self) -> float:
        """Seconds per token of plain decoding."""
        return self.v0 * self.plain_factor


# from the rounds of real-pair runs (bench/real_pair.py and the traces in the issue notes)
CODE = Pair(draft=0.16, v0=0.60, vs=0.015, plain_factor=0.92)
OPEN = Pair(draft=0.175, v0=0.49, vs=0.045, plain_factor=0.94)
# the same pair on a later run of the same machine: plain bursts timed token by token (0.35 s a token against
# 0.44 s for a K=1 verify pass) put plain decoding at about 0.82 of a one-token verify, and 5-6% ahead of K=1
# on the 64-token story (the real run: K=1 0.94x plain, K=2 0.88x)
OPEN_PLAIN_WINS = Pair(draft=0.175, v0=0.49, vs=0.045, plain_factor=0.82)


def acceptance(kind: str, position: int) -> float:
    """Chance the draft's guess at a position matches: code throughout; a story's predictable first line."""
    return {"code": 0.97, "bad": 0.25}.get(kind, 0.93 if position < 12 else 0.66)


def synthetic(kind: str, n: int, seed: int) -> list[bool]:
    """A random match sequence of n positions with acceptance(kind, position)."""
    draws = random.Random(seed)
    return [draws.random() < acceptance(kind, i) for i in range(n)]


@functools.cache
def _recorded_replies() -> dict[str, dict]:
    return json.loads(RECORDED.read_text())["replies"]


def recorded(name: str, n: int | None = None) -> list[bool]:
    """The real pair's match sequence for one reply ("code-0", "open-1", ...), its first n positions."""
    return [c == "1" for c in _recorded_replies()[name]["match"][:n]]


def recorded_confidence(name: str, n: int | None = None) -> list[float]:
    """The draft's top-1 probability at each position of a recorded reply."""
    return list(_recorded_replies()[name]["top1"][:n])


@dataclass(frozen=True)
class Reply:
    """A reply in numbers: whether the draft's guess matches at each position, and how sure it was."""

    match: list[bool]
    confidence: list[float]

    def __len__(self) -> int:
        return len(self.match)

    @classmethod
    def real(cls, name: str, n: int | None = None) -> Reply:
        """A recorded reply of the real pair."""
        return cls(recorded(name, n), recorded_confidence(name, n))


def run(
    match: list[bool] | Reply,
    pair: Pair,
    seed: int,
    fixed: int | None = None,
    auto: AutoK | None = None,
    noise: float = 0.05,
) -> float:
    """Seconds one reply takes (as many tokens as the match sequence) at a fixed K, or with `auto` choosing
    (drafts that stop early where the reply carries the draft's confidence)."""
    if isinstance(match, Reply):
        confidence: list[float] | None = match.confidence + [0.0] * 20
        match = match.match
    else:
        confidence = None
    n, match = len(match), match + [False] * 20
    jitter = random.Random(seed + 99)
    pos, seconds, unseen = 0, 0.0, 0
    if auto is not None:
        auto.new_reply()
    while pos < n:
        plan = None
        if auto is not None:
            auto.left = n - pos
        if auto is None:
            k = min(fixed or 0, n - pos)
        elif confidence is not None:
            plan = auto.plan()
            k = min(plan.k, n - pos)
        else:
            k = min(auto.choose(), n - pos)
        if k == 0:
            burst = min(auto.burst_length(), n - pos)
            factor = 1 + jitter.gauss(0, noise)
            cost = (pair.v0 + (burst - 1) * pair.plain) * factor
            auto.observe_plain(burst, cost if burst == 1 else burst * pair.plain * factor)  # timed from step 2 on
            seconds, pos, unseen = seconds + cost, pos + burst, unseen + burst
            continue
        steps, confidences = k, None
        if plan is not None and confidence is not None:
            plan.k = k
            steps = _draft_with(plan, confidence[pos : pos + k])
            k, confidences = plan.kept(), plan.confidences
        accepted = 0
        while accepted < k and match[pos + accepted]:
            accepted += 1
        draft = steps * pair.draft * (1 + jitter.gauss(0, noise)) + unseen * pair.catch_up
        verify = (pair.v0 + pair.vs * k) * (1 + jitter.gauss(0, noise))
        if auto is not None:
            auto.observe(k, accepted, draft, verify, catch_up=unseen + 1, confidences=confidences, steps=steps)
        seconds, pos, unseen = seconds + draft + verify, pos + accepted + 1, 1
    return seconds


def _draft_with(plan: RoundPlan, confidences: list[float]) -> int:
    """Draft token by token as the plan says; returns the draft steps run."""
    for step, confidence in enumerate(confidences, 1):
        keep, more = plan.take(confidence)
        if not (keep and more):
            return step
    return len(confidences)


@dataclass
class CountingAutoK(AutoK):
    """AutoK that counts the tokens it decoded plainly."""

    plain_tokens: int = 0

    def observe_plain(self, tokens: int, seconds: float) -> None:
        """Count the burst, then fold it in."""
        self.plain_tokens += tokens
        super().observe_plain(tokens, seconds)


def conversation_seconds(
    replies: list[list[bool]], pair: Pair, seed: int, fixed: int | None = None, auto: AutoK | None = None
) -> float:
    """Seconds for the replies one after the other; with no fixed K, one AutoK carries across them."""
    if fixed is None and auto is None:
        auto = AutoK(k_max=AUTO_MAX_DRAFT_TOKENS)
    return sum(run(match, pair, seed, fixed=fixed, auto=auto) for match in replies)


def plain_tokens(replies_by_seed, pair: Pair, seeds: int = 30) -> tuple[float, float]:
    """(tokens decoded plainly, of them by probes while speculating) per conversation, over the seeds."""
    controllers = [CountingAutoK(k_max=AUTO_MAX_DRAFT_TOKENS) for _ in range(seeds)]
    for s, auto in enumerate(controllers):
        conversation_seconds(replies_by_seed(s), pair, s, auto=auto)
    return statistics.fmean(a.plain_tokens for a in controllers), statistics.fmean(a.probe.spent for a in controllers)


def compare(replies_by_seed, pair: Pair, seeds: int = 30, ks=(1, 2, 3, 4)) -> tuple[float, float]:
    """(auto / best fixed K, auto / plain decoding) in speed, each over the seeds (noise, and the match
    sequences where replies_by_seed draws them), a fresh controller per conversation."""
    replies = [replies_by_seed(s) for s in range(seeds)]
    auto = statistics.fmean(conversation_seconds(r, pair, s) for s, r in enumerate(replies))
    best = min(statistics.fmean(conversation_seconds(r, pair, s, fixed=k) for s, r in enumerate(replies)) for k in ks)
    plain = statistics.fmean(sum(map(len, r)) * pair.plain for r in replies)
    return best / auto, plain / auto
