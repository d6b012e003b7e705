"""One K per batched round: the K that maximises the whole batch's tokens per second.

Every row drafts as deep as the deepest (drafting and verifying are one pass for all rows),
so the choice is the batch's. A round's time is measured per batch size, because a verify
pass over B rows stops being bound by reading the weights as B grows and speculation pays
less: the cost of K >= 1 is a straight line per batch size, fitted over the Ks measured there, and
a plain step (K = 0, no drafting) is measured on its own, since it is no point on that line (on a
CPU a batched draft step costs far more than a single one). Each row's acceptance is its own
decayed estimate, started from what every row so far accepted (the pair's pooled acceptance): a plain
round teaches nothing about acceptance, so a row that started from a blind prior could keep a batch
plain where drafting pays. For the same reason the rounds that try another K try the one that would be
best were every row's acceptance one standard error higher than estimated (at most policy.explore_reach past
the best), if that differs from the best; else the least measured neighbour of the best, so the cost line
keeps being measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..autok import expected_tokens
from ..draft_stop import ConfidenceModel, StopCosts
from ..policy import DEFAULT_POLICY, SpeculationPolicy


@dataclass
class _Timing:
    """Decayed mean round time per K at one batch size."""

    policy: SpeculationPolicy  # its memory, explore gaps and prior draft share (policy.py)
    sums: dict[int, float] = field(default_factory=dict)
    weights: dict[int, float] = field(default_factory=dict)
    since: int = 0  # rounds at this size since the last try of another K
    gap: int = field(
        init=False
    )  # rounds between tries (policy.explore_every at first): doubles while tries change nothing
    tried: int | None = None  # the K of the last try, until the next choice says whether it became the best

    def __post_init__(self) -> None:
        self.gap = self.policy.explore_every

    def explore_due(self, best: int) -> bool:
        """Whether this round tries another K than `best` (after the last try: its gap halves back to
        policy.explore_every if the try became the best, else doubles)."""
        if self.tried is not None:
            self.gap = (
                self.policy.explore_every if best == self.tried else min(2 * self.gap, self.policy.max_explore_gap)
            )
            self.tried = None
        self.since += 1
        if self.since < self.gap:
            return False
        self.since = 0
        return True

    def add(self, k: int, seconds: float) -> None:
        self.sums[k] = self.sums.get(k, 0.0) * self.policy.batch_decay + seconds
        self.weights[k] = self.weights.get(k, 0.0) * self.policy.batch_decay + 1.0

    def cost(self, k: int) -> float | None:
        """A round's expected time at K: measured, else (K >= 1) from the line through the measured Ks >= 1;
        None for a K = 0 round never measured (a plain step is no point on the drafting line)."""
        if k in self.sums:
            return self.sums[k] / self.weights[k]
        line = self.line()
        return None if k == 0 or line is None else line[0] + line[1] * k

    def line(self) -> tuple[float, float] | None:
        """(intercept, seconds per draft) through the drafting rounds by weighted least squares; None before any."""
        means = {k: self.sums[k] / self.weights[k] for k in self.sums if k > 0}
        if not means:
            return None
        if len(means) == 1:
            ((k, t),) = means.items()
            base = t / (1.0 + self.policy.prior_draft_share * k)
            return base, base * self.policy.prior_draft_share
        w = {k: self.weights[k] for k in means}
        total = sum(w.values())
        mk = sum(w[k] * k for k in means) / total
        mt = sum(w[k] * means[k] for k in means) / total
        var = sum(w[k] * (k - mk) ** 2 for k in means)
        slope = max(sum(w[k] * (k - mk) * (means[k] - mt) for k in means) / var, 0.0)
        return max(mt - slope * mk, 1e-9), slope


class RowAcceptance:
    """One row's decayed share of drafts the target accepted."""

    def __init__(
        self, accepted: float | None = None, checked: float | None = None, policy: SpeculationPolicy = DEFAULT_POLICY
    ) -> None:
        """accepted and checked: the evidence it starts from (None: the policy's row_prior)."""
        self.policy = policy
        self.accepted = policy.row_prior[0] if accepted is None else accepted
        self.checked = policy.row_prior[1] if checked is None else checked

    def observe(self, drafted: int, accepted: int) -> None:
        """Add one round's counts (about the last thirty checked drafts count). Only the drafts up to the first
        refused one were checked: those after it say nothing (counted as refusals, a deep K would read a
        0.85 acceptance as 0.6 and keep the batch plain)."""
        checked = accepted + (1 if accepted < drafted else 0)
        keep = self.policy.row_decay**checked
        self.accepted = self.accepted * keep + accepted
        self.checked = self.checked * keep + checked

    @property
    def rate(self) -> float:
        """The estimated probability that the next draft is accepted."""
        return min(self.accepted / self.checked, 0.999) if self.checked else 0.5

    @property
    def hopeful(self) -> float:
        """The rate one standard error above the estimate (what a round that explores assumes)."""
        p = self.rate
        return min(p + math.sqrt(p * (1.0 - p) / max(self.checked, 1.0)), 0.999)


class BatchK:
    """Chooses each batched round's K from round times per batch size and each row's acceptance."""

    def __init__(self, k_max: int | None = None, policy: SpeculationPolicy = DEFAULT_POLICY):
        """k_max: the deepest a round drafts (None: the policy's batch_k_max)."""
        self.policy = policy
        self.k_max = policy.batch_k_max if k_max is None else k_max
        self.timings: dict[int, _Timing] = {}
        self.last_k = min(2, self.k_max)
        self.pooled = RowAcceptance(policy=policy)  # every row's drafts, decayed: where a new row starts
        self.verify: dict[int, _Timing] = {}  # the verify passes alone, per batch size
        self.confidence = ConfidenceModel(policy=policy)  # acceptance by draft confidence, every row's (batch_stop.py)

    def plan(
        self, rates: list[float], top: int, hopeful: list[float]
    ) -> tuple[int, tuple[StopCosts, ConfidenceModel] | None]:
        """The next round's K and, once its costs are measured at this size, the early stop that may end its
        drafting sooner (the K is then policy.stop_reach deeper: the stop cuts what does not pay)."""
        top = min(top, self.k_max)
        k = self.choose(rates, top, hopeful)
        stop = self._stop(rates, k)
        return (min(top, k + self.policy.stop_reach), stop) if stop is not None else (k, None)

    def _stop(self, rates: list[float], k: int) -> tuple[StopCosts, ConfidenceModel] | None:
        """The early stop's costs in tokens: a verify position (keep a step) and a draft step plus one (draft
        another), each for the whole batch, times the rate it is expected to reach at K."""
        timing, verify = self.timings.get(len(rates)), self.verify.get(len(rates))
        if k == 0 or timing is None or verify is None or len(verify.sums) < 2:
            return None
        line, verify_line, cost = timing.line(), verify.line(), timing.cost(k)
        if line is None or verify_line is None or not cost:
            return None
        rate = sum(expected_tokens(a, k) for a in rates) / cost
        self.confidence.overall = self.pooled.rate
        return StopCosts(rate * verify_line[1], rate * line[1]), self.confidence

    def new_row(self, accepted: int = 0, checked: int = 0) -> RowAcceptance:
        """A joining row's acceptance: the pooled rate, weighing policy.pooled_weight drafts, then its own counts
        (a request that ran alone before it joined: its accepted and checked drafts)."""
        weight = min(self.policy.pooled_weight, self.pooled.checked)
        row = (
            RowAcceptance(self.pooled.rate * weight, weight, self.policy)
            if weight
            else RowAcceptance(policy=self.policy)
        )
        if checked:
            row.accepted, row.checked = row.accepted + accepted, row.checked + checked
            self.pooled.accepted, self.pooled.checked = self.pooled.accepted + accepted, self.pooled.checked + checked
        return row

    def observe_row(self, row: RowAcceptance, drafted: int, accepted: int) -> None:
        """Add one row's round (or history) to its own and the pooled acceptance."""
        row.observe(drafted, accepted)
        self.pooled.observe(drafted, accepted)

    def choose(self, rates: list[float], k_max: int | None = None, hopeful: list[float] | None = None) -> int:
        """The K for the next round of len(rates) rows (0: a plain step), up to k_max. A batch size's first
        round drafts; its second is plain, so plain decoding's cost there is measured, not guessed. `hopeful`:
        each row's rate one standard error up (RowAcceptance.hopeful), for the rounds that explore. A batch
        drafts at most its own k_max, whatever its rows allow alone."""
        top = self.k_max if k_max is None else min(k_max, self.k_max)
        timing = self.timings.get(len(rates))
        if timing is None or not timing.sums:
            return min(self.last_k, top)
        if 0 not in timing.sums:
            return 0
        costs = {k: c for k in range(top + 1) if (c := timing.cost(k)) is not None}
        best = _best(costs, rates)
        if timing.explore_due(best):
            best = timing.tried = self._explore(timing, costs, best, hopeful or rates, top)
        self.last_k = best if best > 0 else self.last_k
        return best

    def _explore(self, timing: _Timing, costs: dict[int, float], best: int, hopeful: list[float], top: int) -> int:
        """The K a round that explores tries instead of `best`."""
        if (hoped := min(_best(costs, hopeful), best + self.policy.explore_reach)) != best:
            return hoped
        near = [k for k in (best - 1, best + 1) if 0 <= k <= top]
        return min(near, key=lambda k: timing.weights.get(k, 0.0)) if near else best

    def observe(self, rows: int, k: int, seconds: float, verify_s: float | None = None) -> None:
        """Add one round's time (and its verify pass's): `rows` sequences, K drafts each."""
        self.timings.setdefault(rows, _Timing(self.policy)).add(k, seconds)
        if verify_s is not None and k > 0:
            self.verify.setdefault(rows, _Timing(self.policy)).add(k, verify_s)


def checked_drafts(accepted: int, drafted: int, rounds: int) -> tuple[int, int]:
    """(accepted, checked) drafts from a request's totals (each round checks up to its first refusal; a round
    that took every draft counts as one that missed: the totals cannot tell)."""
    return accepted, accepted + min(rounds, drafted - accepted)


def _best(costs: dict[int, float], rates: list[float]) -> int:
    """The K with the most expected tokens per second for rows accepting at these rates."""
    return max(costs, key=lambda k: sum(expected_tokens(a, k) for a in rates) / costs[k])
