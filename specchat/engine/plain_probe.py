"""When Auto K measures plain decoding while speculation is ahead of it.

Plain decoding dispatches each step before reading the last one, so its Python work hides under the
model's compute: a plain token costs less than a verify pass over one token (the verify line's value at
K = 0, which is all the controller knows of plain decoding until it measures it). On the real Qwen pair
on this CPU a plain token cost about 0.82 of that pass, enough to put plain decoding ahead of every K on
a story. So where speculation is predicted less than policy.probe_margin ahead of that estimate, once a few
rounds (policy.probe_after) have given its rate, a short burst of policy.probe_burst tokens measures plain decoding;
from then on the measured cost stands, moved as the verify passes have moved since (the machine got faster
or slower). It is measured again only when they have moved by more than policy.reprobe_shift, and probes take
at most policy.max_probe_share of the tokens decoded. Where speculation is far ahead (code) no probe is spent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .policy import DEFAULT_POLICY, SpeculationPolicy


@dataclass
class PlainProbe:
    """What the probes need to know: the verify costs when plain was last measured, and tokens."""

    costs: dict[int, float] | None = None  # the verify costs by K at the last plain burst
    rounds: dict[int, int] = field(default_factory=dict)  # and the rounds each K had had by then
    tokens: int = 0  # tokens decoded, by rounds and plain bursts alike
    spent: int = 0  # plain tokens decoded by probes
    pending: bool = False  # a probe was chosen: the next plain burst is policy.probe_burst tokens
    policy: SpeculationPolicy = DEFAULT_POLICY  # its margin, timing and share (policy.py)

    def drift(self, verify_s: dict[int, float], verify_rounds: dict[int, int]) -> float:
        """How much dearer verify passes are now than at the last plain burst: each K's cost now over its cost
        then, weighted by its rounds since (1.0 while no K has run since)."""
        weights = {k: verify_rounds.get(k, 0) - self.rounds.get(k, 0) for k in self.costs or {} if k in verify_s}
        total = sum(weights.values())
        if not self.costs or total <= 0:
            return 1.0
        return sum(w * verify_s[k] / self.costs[k] for k, w in weights.items()) / total

    def due(self, margin: float, rounds: int, drift: float | None) -> bool:
        """Whether to probe plain decoding now: speculation's predicted speedup over it (margin) is small and
        the first rounds have run; once plain was measured (drift not None), only if verify passes moved since
        by policy.reprobe_shift and the token share allows."""
        if margin >= self.policy.probe_margin or rounds < self.policy.probe_after:
            return False
        if drift is not None and not (abs(drift - 1) > self.policy.reprobe_shift and self._affordable()):
            return False
        self.pending = True
        return True

    def counted(self, tokens: int) -> None:
        """Tokens a speculative round emitted."""
        self.tokens += tokens

    def burst_done(self, tokens: int, verify_s: dict[int, float], verify_rounds: dict[int, int]) -> None:
        """A plain burst measured plain decoding; the verify costs and rounds by K as they are now."""
        if self.pending:
            self.spent += tokens
        self.pending = False
        self.tokens += tokens
        self.costs, self.rounds = dict(verify_s), dict(verify_rounds)

    def _affordable(self) -> bool:
        return self.spent + self.policy.probe_burst <= self.policy.max_probe_share * self.tokens


@dataclass
class BurstClock:
    """When a plain burst's steps came out. A burst's first token costs more than the rest (it has no step
    before it to overlap with), so a 4-token probe timed whole reads plain decoding about 5% dear. Its last
    step is no measure either: no pass was dispatched after it, and where dispatching runs most of a pass
    before returning (MLX's CPU backend) its token comes out a fifth of a pass after the one before."""

    now: Callable[[], float] = time.perf_counter
    times: list[float] = field(default_factory=list)  # when each step came out
    tokens: list[int] = field(default_factory=list)  # and how many tokens it brought

    def step(self, tokens: int) -> None:
        """A step with this many tokens came out now."""
        self.times.append(self.now())
        self.tokens.append(tokens)

    def steady_s(self, emitted: int, elapsed: float) -> float:
        """The burst's seconds at the pace of its steps between the first and the last (elapsed when it has no
        step between them)."""
        between = sum(self.tokens[1:-1])
        if len(self.times) < 3 or between <= 0:
            return elapsed
        return (self.times[-2] - self.times[0]) / between * emitted
