"""Auto draft length: each round pick the K that maximises expected tokens per second.

Per-token acceptance is a decayed estimate; draft-step and verify costs are measured
online on this machine, the verify cost per K (it is not flat on every chip). K = 0
is a plain decoding round; while at 0 the controller probes now and then so it can
come back when the text becomes predictable.

A new controller speculates first (K = START_K: one round measures a draft step and a
verify pass), then reads plain decoding's cost from a short burst, then chooses. A round
whose drafter first had to catch up on a plain burst's tokens says nothing about a draft
step's cost: its draft time is left out, or every burst would make drafting look dearer
and keep the controller at K = 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def expected_tokens(alpha: float, k: int) -> float:
    """Tokens one round yields with k drafts accepted i.i.d. with probability alpha."""
    if alpha >= 1.0:
        return k + 1.0
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


START_K = 2  # the first round's K: one speculative round tells the draft-step and verify costs
FIRST_BURST = 4  # the first plain burst, which only measures plain decoding's cost per token
NORMAL_CATCH_UP = 2  # tokens a drafter takes in at the start of a round after a full accept


@dataclass
class AutoK:
    """Chooses K in 0..k_max from decayed acceptance and measured costs."""

    k_max: int = 8
    decay: float = 0.9
    probe_every: int = 16
    accepted: float = 1.0  # prior: one success, one failure (alpha = 0.5)
    rejected: float = 1.0
    draft_step_s: float | None = None
    verify_s: dict[int, float] = field(default_factory=dict)
    rounds_at_zero: int = 0

    @property
    def alpha(self) -> float:
        """Current estimate of the per-token acceptance probability."""
        return self.accepted / (self.accepted + self.rejected)

    def choose(self) -> int:
        """The K for the next round."""
        if self.draft_step_s is None:
            return min(START_K, self.k_max)  # speculate first: a round measures drafting and verifying
        if 0 not in self.verify_s:
            return 0  # then plain decoding's cost, from a short burst
        reach = min(self.k_max, max(self.verify_s) + 2)  # explore longer drafts two at a time
        best = max(range(reach + 1), key=self.rate)
        if best == 0:
            self.rounds_at_zero += 1
            if self.rounds_at_zero % self.probe_every == 0:
                return 1
        else:
            self.rounds_at_zero = 0
        return best

    def burst_length(self) -> int:
        """Tokens a plain burst decodes: a few to measure plain decoding, then probe_every."""
        return FIRST_BURST if 0 not in self.verify_s else self.probe_every

    def rate(self, k: int) -> float:
        """Expected tokens per second of a round with k drafts."""
        cost = k * (self.draft_step_s or 0.0) + self.verify_cost(k)
        return expected_tokens(self.alpha, k) / cost if cost > 0 else 0.0

    def verify_cost(self, k: int) -> float:
        """Measured verify time for k drafts; unmeasured K interpolate linearly between neighbours."""
        if k in self.verify_s:
            return self.verify_s[k]
        known = sorted(self.verify_s)
        lower = max((x for x in known if x < k), default=None)
        upper = min((x for x in known if x > k), default=None)
        if upper is None:  # extend the last measured slope (never downwards)
            if len(known) < 2:
                return self.verify_s[lower]
            a, b = known[-2], known[-1]
            slope = max(0.0, (self.verify_s[b] - self.verify_s[a]) / (b - a))
            return self.verify_s[b] + slope * (k - b)
        if lower is None:
            return self.verify_s[upper]
        w = (k - lower) / (upper - lower)
        return self.verify_s[lower] * (1 - w) + self.verify_s[upper] * w

    def observe_plain(self, tokens: int, seconds: float) -> None:
        """Fold a burst of plain decoding in: its cost per token is the K=0 round cost."""
        if tokens:
            self.verify_s[0] = _ema(self.verify_s.get(0), seconds / tokens, self.decay)
            self.rounds_at_zero += tokens - 1  # probing counts tokens spent at K=0, not bursts

    def observe(self, k: int, accepted: int, draft_s: float, verify_s: float, catch_up: int = 0) -> None:
        """Fold one finished round into the estimates; catch_up is how many tokens the drafter took in
        before drafting (a round after a plain burst: its draft time is not a draft step's cost)."""
        self.verify_s[k] = _ema(self.verify_s.get(k), verify_s, self.decay)
        if k == 0:
            return
        if catch_up <= NORMAL_CATCH_UP or self.draft_step_s is None:
            self.draft_step_s = _ema(self.draft_step_s, draft_s / k, self.decay)
        self.accepted = self.decay * self.accepted + accepted
        self.rejected = self.decay * self.rejected + (1 if accepted < k else 0)


def _ema(old: float | None, new: float, decay: float) -> float:
    return new if old is None else decay * old + (1 - decay) * new
