"""Drafts that stop when the drafter is unsure.

The drafter's confidence in a token (its top-1 probability; for prompt lookup, how long and how
often the match recurs) predicts whether the target will accept it. ConfidenceModel learns, online
and per pair, how acceptance depends on that confidence and on what happened just before: on
prose misses come in runs, on code matches do, which an i.i.d. acceptance cannot see. A RoundPlan
then keeps drafting while one more token is expected to bring more than it costs at the rate the
controller expects to reach: a draft step plus what one more token adds to the verify pass, both
measured. Where verifying one token costs what verifying K+1 does (a Mac's GPU) the only cost is the
draft step, so the rule drafts further.

Only the draft's own probabilities decide where a draft stops, so rejection sampling stays exact at
temperature > 0, and greedy output stays the target's own.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .modes import DraftOutcome
from .pass_costs import PassCosts
from .policy import DEFAULT_POLICY, SpeculationPolicy

STATES = tuple(DraftOutcome)  # before this token: a draft the target took, a draft it refused, a full round

TENTHS = 10  # acceptance by confidence is reported per tenth of [0, 1]


def confidence_tenth(confidence: float) -> int:
    """The tenth of [0, 1] a confidence falls in, 0..9 (1.0 joins the top tenth)."""
    return min(max(int(confidence * TENTHS), 0), TENTHS - 1)


def checked_drafts(confidences: Sequence[float], accepted: int) -> Iterator[tuple[int, bool]]:
    """(tenth, accepted) of each draft the target checked: draft i is checked when i <= accepted (the first
    refused one is, those after it are not) and accepted when i < accepted."""
    for i, confidence in enumerate(confidences[: accepted + 1]):
        yield confidence_tenth(confidence), i < accepted


def confidence_bin(confidence: float, edges: Sequence[float] = DEFAULT_POLICY.confidence_edges) -> int:
    """The bin of a confidence in [0, 1] (edges: the policy's confidence_edges)."""
    return bisect.bisect_right(edges, confidence)


@dataclass
class ConfidenceModel:
    """P(a drafted token is accepted | its confidence, the outcome just before it), decayed counts."""

    hits: dict[tuple[str, int], float] = field(default_factory=dict)
    trials: dict[tuple[str, int], float] = field(default_factory=dict)
    state_hits: dict[str, float] = field(default_factory=dict)
    state_trials: dict[str, float] = field(default_factory=dict)
    next_hits: dict[int, float] = field(default_factory=dict)  # by the coarse bin of the accepted token before
    next_trials: dict[int, float] = field(default_factory=dict)
    overall: float = 0.6  # the acceptance every estimate falls back on (the controller's alpha)
    policy: SpeculationPolicy = DEFAULT_POLICY  # its priors, bins, calibration start and memory (policy.py)
    # logit(acceptance) ~ a + b * logit(confidence), fit online from the policy's greedy_calibration
    calibration: tuple[float, float] = field(init=False)

    def __post_init__(self) -> None:
        self.calibration = self.policy.greedy_calibration

    def p_state(self, state: str) -> float:
        """Acceptance of the next token before its confidence is known."""
        hits, trials = self.state_hits.get(state, 0.0), self.state_trials.get(state, 0.0)
        return (hits + self.policy.state_prior_weight * self.overall) / (trials + self.policy.state_prior_weight)

    def p(self, state: str, confidence: float) -> float:
        """Acceptance of a token drafted with this confidence after this outcome (until its bin is measured,
        the draft's own probability as the calibration fit reads it)."""
        key = (state, confidence_bin(confidence, self.policy.confidence_edges))
        hits, trials = self.hits.get(key, 0.0), self.trials.get(key, 0.0)
        return (hits + self.policy.prior_weight * self.calibrated(confidence)) / (trials + self.policy.prior_weight)

    def calibrated(self, confidence: float) -> float:
        """The acceptance the calibration fit over every bin gives this confidence."""
        a, b = self.calibration
        return _sigmoid(a + b * _logit(confidence))

    def p_after(self, confidence: float) -> float:
        """Acceptance of the token after an accepted one drafted with this confidence (uncertain text clusters)."""
        key = bisect.bisect_right(self.policy.next_edges, confidence)
        hits, trials = self.next_hits.get(key, 0.0), self.next_trials.get(key, 0.0)
        prior = self.p_state(DraftOutcome.MATCH) * (
            1 - self.policy.after_confidence + self.policy.after_confidence * confidence
        )
        return (hits + self.policy.state_prior_weight * prior) / (trials + self.policy.state_prior_weight)

    def observe(self, state: str, confidence: float, accepted: bool, before: float | None = None) -> None:
        """One verified draft token; before: the confidence of the accepted draft just before it in its round."""
        for counts in (self.hits, self.trials, self.state_hits, self.state_trials, self.next_hits, self.next_trials):
            _forget(counts, self.policy.confidence_forget)
        _count(self.hits, self.trials, (state, confidence_bin(confidence, self.policy.confidence_edges)), accepted)
        self._fit(confidence, accepted)
        _count(self.state_hits, self.state_trials, state, accepted)
        if before is not None:
            _count(self.next_hits, self.next_trials, bisect.bisect_right(self.policy.next_edges, before), accepted)

    def _fit(self, confidence: float, accepted: bool) -> None:
        """One stochastic-gradient step of the logistic calibration on a verified token."""
        a, b = self.calibration
        x = _logit(confidence)
        error = float(accepted) - _sigmoid(a + b * x)
        self.calibration = (
            a + self.policy.calibration_rate * error,
            b + self.policy.calibration_rate * error * x / self.policy.calibration_slope_damping,
        )

    def observe_round(self, entry: str, confidences: Sequence[float], accepted: int) -> None:
        """One round's verified drafts: each up to the first refused one, after the outcome before it."""
        seen = confidences[: accepted + 1]
        for i, confidence in enumerate(seen):
            self.observe(entry if i == 0 else DraftOutcome.MATCH, confidence, i < accepted, seen[i - 1] if i else None)


def _logit(p: float) -> float:
    p = min(max(p, 1e-3), 1 - 1e-3)
    return math.log(p / (1 - p))


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def _forget(counts: dict[Any, float], factor: float) -> None:
    for key in counts:
        counts[key] *= factor


def _count(hits: dict[Any, float], trials: dict[Any, float], key: object, accepted: bool) -> None:
    trials[key] = trials.get(key, 0.0) + 1.0
    if accepted:
        hits[key] = hits.get(key, 0.0) + 1.0


@dataclass(frozen=True)
class StopCosts:
    """What one more draft costs, in expected tokens: keep_at (one more token in the verify pass) and
    go_on_at (a draft step plus that), both times the rate the controller expects to reach."""

    keep_at: float
    go_on_at: float


@dataclass
class RoundPlan:
    """One round's drafting: at most k tokens, each kept while it pays; the drafter calls take() after each."""

    k: int
    entry: str  # the outcome before the round's first token
    costs: StopCosts | None  # None: no early stop (a fixed K, or nothing measured yet)
    model: ConfidenceModel | None = None
    confidences: list[float] = field(default_factory=list)
    prefix: float = 1.0  # the chance every token kept so far is accepted
    stopped_early: bool = False
    stop_confidence: float | None = None  # the confidence of the token where drafting stopped early
    passes: PassCosts | None = None  # this pair's passes as measured (None: unmeasured)

    def take(self, confidence: float) -> tuple[bool, bool]:
        """The drafter drafted a token with this confidence: (keep it, draft another)."""
        index = len(self.confidences)
        state = self.entry if index == 0 else DraftOutcome.MATCH
        if self.costs is None or self.model is None:
            self.confidences.append(confidence)
            return True, index + 1 < self.k
        chance = self.prefix * self.model.p(state, confidence)
        if index > 0 and chance < self.costs.keep_at:
            self.stopped_early, self.stop_confidence = True, confidence
            return False, False
        self.confidences.append(confidence)
        self.prefix = chance
        more = index + 1 < self.k
        if more and chance * self.model.p_after(confidence) < self.costs.go_on_at:
            self.stopped_early, self.stop_confidence, more = True, confidence, False
        return True, more

    def kept(self) -> int:
        """Tokens the drafter keeps (what the target verifies)."""
        return len(self.confidences)
