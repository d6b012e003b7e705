"""Auto K's cost side: what a round of k drafts is expected to cost and bring, from the measured draft step,
the verify passes (shrunk towards a straight line through every K's, never sloping down) and plain decoding;
mixed into AutoK (autok.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .draft_stop import StopCosts
from .pass_costs import PassCosts, expected_tokens
from .policy import SpeculationPolicy


class AutoKCosts:
    """Seconds and expected tokens per second of a round by K; the host class (AutoK) provides the measured
    costs below, alpha and plain_drift()."""

    k_max: int
    policy: SpeculationPolicy
    draft_step_s: float | None
    verify_s: dict[int, float]
    verify_rounds: dict[int, int]
    plain_s: float | None
    expected_rate: float
    one_pass_draft: bool

    if TYPE_CHECKING:  # provided by the host class (AutoK)

        @property
        def alpha(self) -> float: ...

        def plain_drift(self) -> float: ...

    def pass_costs(self) -> PassCosts | None:
        """The passes as measured on this pair (None before a verify pass was): a draft pass not yet measured is
        policy.prior_draft_share of a one-draft verify pass."""
        if not self.verify_s:
            return None
        fit = self._verify_line()  # once for every K
        verify = tuple(self.verify_cost(k, fit) for k in range(self.k_max + 1))
        step = self.draft_step_s if self.draft_step_s is not None else self.policy.prior_draft_share * verify[1]
        return PassCosts(verify, step, self.one_pass_draft)

    def stop_costs(self) -> StopCosts:
        """A token's keep and go-on thresholds: its costs in seconds times the rate the controller expects. A block
        drafter's next row is already computed, so going on costs nothing: each row is kept on its own chance."""
        _, slope = self._verify_line()
        rate = self.expected_rate
        if self.one_pass_draft:
            return StopCosts(rate * slope, 0.0)
        return StopCosts(rate * slope, rate * ((self.draft_step_s or 0.0) + slope))

    def rate(self, k: int) -> float:
        """Expected tokens per second of a round with k drafts (k = 0: plain decoding)."""
        cost = self.draft_seconds(k) + self.verify_cost(k)
        return expected_tokens(self.alpha, k) / cost if cost > 0 else 0.0

    def draft_seconds(self, k: int) -> float:
        """Seconds of drafting for k tokens: k draft steps, or one pass for any k >= 1 (one_pass_draft)."""
        passes = min(k, 1) if self.one_pass_draft else k
        return passes * (self.draft_step_s or 0.0)

    def verify_cost(self, k: int, fit: tuple[float, float] | None = None) -> float:
        """Cost of a round's target pass for k drafts (plain decoding's per token at k = 0, once measured):
        its own measurements shrunk towards the straight line through every K's (never sloping down); `fit`:
        that line's intercept and slope, when the caller already has them."""
        if k == 0 and self.plain_s is not None:
            return self.plain_s * self.plain_drift()  # moved as the verify passes did since it was measured
        intercept, slope = self._verify_line() if fit is None else fit
        line = intercept + slope * k
        rounds = min(self.verify_rounds.get(k, 0), self.policy.max_rounds_weight)
        return (rounds * self.verify_s.get(k, 0.0) + self.policy.line_weight * line) / (
            rounds + self.policy.line_weight
        )

    def _verify_line(self) -> tuple[float, float]:
        """Weighted least squares of verify cost on K (weights: rounds measured, up to policy.max_rounds_weight)."""
        weights = {k: min(self.verify_rounds.get(k, 1), self.policy.max_rounds_weight) for k in self.verify_s}
        total = sum(weights.values())
        mean_k = sum(w * k for k, w in weights.items()) / total
        mean_s = sum(w * self.verify_s[k] for k, w in weights.items()) / total
        spread = sum(w * (k - mean_k) ** 2 for k, w in weights.items())
        slope = (
            sum(w * (k - mean_k) * (self.verify_s[k] - mean_s) for k, w in weights.items()) / spread if spread else 0.0
        )
        slope = max(0.0, slope)
        intercept = mean_s - slope * mean_k
        return (intercept, slope) if intercept > 0 else (min(self.verify_s.values()), 0.0)
