"""Auto draft length: each round pick the K that maximises expected tokens per second.

Per-token acceptance is a decayed estimate over about the last thirty drafts; the draft-step
and verify costs are measured online on this machine, the verify cost per K (it is not flat on
every chip) with a straight-line fit over the Ks measured for the others. K = 0 is plain decoding;
while at 0 the controller probes now and then so it can come back when the text becomes predictable.

A new controller speculates first (K = policy.start_k: one round measures a draft step and a verify pass).
Until plain decoding is measured its cost is estimated by a verify pass over one token (the fit's value
at K = 0). Where the best K is not expected to beat that by policy.plain_margin (5%), a short burst measures
plain decoding at once; where it is ahead by less than policy.probe_margin, a short probe measures
it after the first rounds, since plain decoding, pipelined, costs less than that pass (plain_probe.py).

Once plain decoding is measured and chosen (a probe's burst is plain decoding too), speculation resumes only
where predicted policy.resume_margin ahead of it: each burst's first step has no step before it to hide its Python
work under, so a 4-token probe reads plain a little dear, and policy.stay_margin (2%, meant for staying with
speculation) would send the controller back to speculating at a K that loses. From plain decoding a K = 1
probe runs after probe_every plain tokens, the gap doubling after each probe that does not beat plain's
rate and back to probe_every after one that does; it runs only where the reply's budget (`left`, set by
the loop) leaves twice the gap, since what speculation could win back is bounded by the tokens left: near
the end of a reply the rest is one plain burst.

A round whose drafter first had to catch up on a plain burst's tokens says nothing
about a draft step's cost: its draft time is left out, or every burst would make drafting look
dearer and keep the controller at K = 0.

A block drafter (DFlash) proposes any K in one forward pass: its `one_pass_draft` says so, and the
controller (`for_drafter`) then bills a round one pass whatever its K, and its early stop weighs each
position of the block by its own probability only (the rows after it cost no further pass).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .autok_costs import AutoKCosts
from .draft_stop import ConfidenceModel, RoundPlan
from .modes import DraftOutcome
from .pass_costs import Acceptance
from .plain_probe import PlainProbe
from .policy import DEFAULT_POLICY, SpeculationPolicy

if TYPE_CHECKING:
    from .drafters import Drafter


@dataclass
class AutoK(AutoKCosts):
    """Chooses K in 0..k_max from decayed acceptance and measured costs."""

    k_max: int = 8
    decay: float = 0.9  # per round, for the cost estimates
    trial_decay: float = 0.97  # per drafted token, for acceptance
    probe_every: int = 16  # plain tokens before the first probe; the gap doubles while probes fail
    policy: SpeculationPolicy = DEFAULT_POLICY  # every tuned knob (policy.py)
    accepted: float = field(init=False)  # decayed accepted drafts, from the policy's prior
    rejected: float = field(init=False)
    draft_step_s: float | None = None  # seconds per draft step (per pass with one_pass_draft)
    verify_s: dict[int, float] = field(default_factory=dict)  # by K >= 1
    verify_rounds: dict[int, int] = field(default_factory=dict)
    plain_s: float | None = None  # plain decoding's measured cost per token
    # the longest K this reply may try (policy.start_k at first): two past the longest fully accepted
    reach: int = field(init=False)
    plain_since_probe: int = 0
    probe_gap: int = 0  # 0: not probing (speculating, or plain not yet chosen)
    early_stop: bool = True  # drafts stop where the drafter is unsure (draft_stop.py)
    confidence: ConfidenceModel = field(init=False)  # with the controller's policy
    entry: DraftOutcome = DraftOutcome.FULL  # the outcome before the next round's first draft: "miss" or "full"
    expected_rate: float = 0.0  # tokens per second of the best choice at the last choose()
    round_count: int = 0  # early-stopping rounds observed, and their decayed tokens and seconds
    round_tokens: float = 0.0
    round_s: float = 0.0
    probe: PlainProbe = field(init=False)  # when to measure plain decoding while speculating
    left: int | None = None  # tokens the reply may still take (its budget less what it emitted), set by the loop
    # the drafter proposes any K in one pass (a block drafter): draft_step_s is then that pass, billed once a round
    one_pass_draft: bool = False

    def __post_init__(self) -> None:
        p = self.policy
        self.accepted, self.rejected = p.prior_alpha * p.reply_evidence, (1 - p.prior_alpha) * p.reply_evidence
        self.reach = p.start_k
        self.confidence = ConfidenceModel(policy=p)
        self.probe = PlainProbe(policy=p)

    def for_drafter(self, drafter: Drafter) -> None:
        """Bill drafts as this drafter costs them: one pass a round (its one_pass_draft) or a step per token."""
        self.one_pass_draft = drafter.one_pass_draft

    @property
    def alpha(self) -> float:
        """Current estimate of the per-token acceptance probability."""
        return self.accepted / (self.accepted + self.rejected)

    def choose(self) -> int:
        """The K for the next round."""
        if self.draft_step_s is None:
            return min(self.policy.start_k, self.k_max)  # speculate first: a round measures drafting and verifying
        rates = {k: self.rate(k) for k in range(1, min(self.k_max, self.reach) + 1)}
        top = max(rates.values())
        best = min(
            (k for k, r in rates.items() if r >= (1 - self.policy.near_tie) * top),
            key=lambda k: (self.verify_rounds.get(k, 0), -rates[k]),
        )
        plain = self.rate(0)
        speculating = self.speculating_rate(rates[best])
        self.expected_rate = max(speculating, plain)
        if not self.probe_gap and self._probe_due(speculating):
            return 0
        if self.plain_s is None:  # plain decoding unmeasured: measure it only if it could win
            return best if speculating >= self.policy.plain_margin * plain else 0
        # the model follows harder text sooner than the measured rate, which remembers thirty rounds (a story's
        # easy first line); from plain decoding speculation must be resume_margin ahead, not within stay_margin
        if (
            min(speculating, rates[best])
            > (self.policy.resume_margin if self.probe_gap else 1 - self.policy.stay_margin) * plain
        ):
            self.probe_gap = 0
            return best
        return self._plain_or_probe()

    def _probe_due(self, speculating: float) -> bool:
        """Whether a short plain burst should measure plain decoding now (plain_probe.py)."""
        drift = None if self.plain_s is None else self.plain_drift()
        return self.probe.due(speculating * self.verify_cost(0), sum(self.verify_rounds.values()), drift)

    def plain_drift(self) -> float:
        """How much dearer verify passes are than when plain decoding was last measured (plain_probe.py)."""
        return self.probe.drift(self.verify_s, self.verify_rounds)

    def measured_rate(self) -> float | None:
        """Tokens per second the early-stopping rounds have actually reached (their decayed sums), once a few
        ran: the i.i.d. model cannot see where drafts stop, so it misjudges their rate both ways."""
        if not self.early_stop or self.round_count < self.policy.measured_rounds or not self.round_s:
            return None
        return self.round_tokens / self.round_s

    def speculating_rate(self, modelled: float) -> float:
        """Tokens per second speculation is expected to reach: the early-stopping rounds' measured rate, shrunk
        towards the i.i.d. model's `modelled` as if that were policy.measured_rounds rounds (a few rounds of one
        or two tokens each read anywhere from a plain token's rate to twice it)."""
        measured = self.measured_rate()
        if measured is None:
            return modelled
        weight = (1 - self.policy.round_decay**self.round_count) / (1 - self.policy.round_decay)
        prior = self.policy.measured_rounds
        return (weight * measured + prior * modelled) / (weight + prior)

    def plan(self) -> RoundPlan:
        """The next round: its longest draft (K = 0: plain decoding) and where drafting stops early."""
        k = self.choose()
        if k == 0 or not self.early_stop or self.draft_step_s is None:
            return RoundPlan(k, self.entry, None, passes=self.pass_costs())
        self.confidence.overall = self.alpha
        return RoundPlan(self.k_max, self.entry, self.stop_costs(), self.confidence, passes=self.pass_costs())

    @property
    def measuring_plain(self) -> bool:
        """Whether the next plain burst measures plain decoding (none yet, or a probe): it runs its full length."""
        return self.plain_s is None or self.probe.pending

    def costless_k(self, depth: int, acceptance: Acceptance) -> int:
        """How many of a draft's depth tokens that cost no model pass (accepted as `acceptance` says) to verify: the
        K with the most expected tokens per second, if that beats plain decoding (both measured), else 0."""
        costs = self.pass_costs()
        if not depth or self.measuring_plain or costs is None:
            return 0
        best, best_rate = costs.best(acceptance, depth, drafted=False)
        return best if best_rate * costs.verify[0] > 1 else 0

    def _plain_or_probe(self) -> int:
        if not self.probe_gap:
            self.probe_gap, self.plain_since_probe = self.probe_every, 0
        if self.plain_since_probe < self.probe_gap or not self._room_for_probe():
            return 0
        self.probe_gap = min(2 * self.probe_gap, self.policy.max_probe_gap)  # if this probe fails, wait longer
        self.plain_since_probe = 0
        return 1

    def _room_for_probe(self) -> bool:
        """Whether the reply leaves tokens enough for a probe from plain decoding to pay: twice the gap, the one
        that follows the probe if it fails (what speculation could win back is bounded by the tokens left)."""
        return self.left is None or self.left >= 2 * self.probe_gap

    def new_reply(self) -> None:
        """A new reply starts (code before, prose now?): alpha is kept but weighs only a few drafts and
        long drafts must be earned again; if plain decoding had won, probe at once (new text may be
        predictable), then every probe_every tokens."""
        self.reach = self.policy.start_k
        weight = self.accepted + self.rejected
        if weight > self.policy.reply_evidence:  # keep alpha, but let this reply's first rounds move it quickly
            self.accepted, self.rejected = (
                x * self.policy.reply_evidence / weight for x in (self.accepted, self.rejected)
            )
        if self.probe_gap:
            self.probe_gap = self.plain_since_probe = max(self.probe_every // 2, 1)

    def burst_length(self) -> int:
        """Tokens the next plain burst decodes: a few to measure plain decoding, else up to the next try of
        speculation, or to the reply's end where no probe would pay (each burst's first step costs more)."""
        if self.plain_s is None or self.probe.pending:
            return self.policy.probe_burst
        if not self.probe_gap:
            return self.probe_every
        if self.left is not None and not self._room_for_probe():
            return max(1, self.left)
        return max(1, min(self.probe_every, self.probe_gap - self.plain_since_probe))

    def observe_plain(self, tokens: int, seconds: float) -> None:
        """Fold a burst of plain decoding in: its cost per token, each token weighing as much as a round (the
        cost measured before first moves as the verify passes did since: the machine got faster or slower)."""
        if not tokens:  # cancelled before its first token: nothing measured
            self.probe.pending = False
            return
        before = None if self.plain_s is None else self.plain_s * self.plain_drift()
        self.plain_s = _ema(before, seconds / tokens, self.decay**tokens)
        self.plain_since_probe += tokens
        if not self.probe_gap:  # decoding plainly now (a probe's burst too): speculation resumes only well ahead
            self.probe_gap, self.plain_since_probe = self.probe_every, 0
        self.probe.burst_done(tokens, self.verify_s, self.verify_rounds)

    def observe_costless(self, k: int, accepted: int, verify_s: float) -> None:
        """Fold in a round drafted at no model pass amid plain decoding: its verify pass is a cost at K like any
        other, but its acceptance and drafting are not the model drafter's; its tokens count toward the next probe."""
        if k:
            self.verify_s[k] = _ema(self.verify_s.get(k), verify_s, self.decay)
            self.verify_rounds[k] = self.verify_rounds.get(k, 0) + 1
        self.plain_since_probe += accepted + 1

    def observe(
        self,
        k: int,
        accepted: int,
        draft_s: float,
        verify_s: float,
        catch_up: int = 0,
        confidences: list[float] | None = None,
        steps: int | None = None,
        verified: int | None = None,
    ) -> None:
        """Fold one finished round into the estimates: k tokens drafted, the first `accepted` of them
        accepted. catch_up is how many tokens the drafter took in before drafting (a round after a plain
        burst: its draft time is not a draft step's cost); confidences are the k tokens' (when the
        drafter gave them), steps the draft steps run (a token dropped for low confidence took one too),
        verified the tokens the verify pass checked (None: k; more where Auto copied on past them)."""
        self.probe.counted(accepted + 1)
        if self.probe_gap and k and accepted + 1 >= self.rate(0) * (draft_s + verify_s):
            self.probe_gap = self.probe_every  # a probe from plain decoding that beat it: the next one comes soon
        if k == 0:  # the drafter had nothing to propose (prompt lookup without a match): a miss
            self._count(0, 1)
            self.entry = DraftOutcome.MISS
            return
        checked = verified or k
        self.verify_s[checked] = _ema(self.verify_s.get(checked), verify_s, self.decay)
        self.verify_rounds[checked] = self.verify_rounds.get(checked, 0) + 1
        if catch_up <= self.policy.normal_catch_up:  # else unmeasured: a fresh controller's rounds stay short
            per_step = draft_s if self.one_pass_draft else draft_s / max(steps or k, 1)
            self.draft_step_s = _ema(self.draft_step_s, per_step, self.decay)
        self._count(accepted, 1 if accepted < k else 0)
        if confidences is not None:
            self.round_count += 1
            self.round_tokens = self.policy.round_decay * self.round_tokens + accepted + 1
            self.round_s = self.policy.round_decay * self.round_s + draft_s + verify_s
        self.confidence.observe_round(self.entry, confidences or [], accepted)
        self.entry = DraftOutcome.FULL if accepted == k else DraftOutcome.MISS
        if accepted == k:
            self.reach = max(self.reach, k + 2)  # explore longer drafts two at a time

    def observe_read(self, agreed: int, compared: int) -> None:
        """The drafter caught up on `compared` tokens of the reply it did not draft (a plain burst, another source's
        round) and its top token agreed with `agreed` of them: under greedy decoding its drafts there would have
        been taken as often (a reply gone plain learns whether drafting would have paid)."""
        self._count(agreed, compared - agreed)

    def _count(self, accepted: int, failed: int) -> None:
        forget = self.trial_decay ** (accepted + failed)
        self.accepted = forget * self.accepted + accepted
        self.rejected = forget * self.rejected + failed


def _ema(old: float | None, new: float, decay: float) -> float:
    return new if old is None else decay * old + (1 - decay) * new
