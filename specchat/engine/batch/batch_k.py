"""One K per batched round, and which Auto K rows draft it: the most expected tokens per second for the batch.

Every drafting row drafts as deep as the deepest (drafting and verifying are one pass for all rows), so the
K is the batch's; a row whose drafts do not pay there decodes plainly in the round while the others draft,
where leaving the draft steps saves something (batch_choice.py). The choice is made from measured costs
(batch_costs.py): a verify pass per batch size and K, because a verify pass over B rows stops being bound by
reading the weights as B grows and speculation pays less, and a draft step per drafting rows. Each row's
acceptance is its own decayed estimate, started from what every row so far accepted (the pair's pooled
acceptance): a plain round teaches nothing about acceptance, so a row that started from a blind prior could
keep a batch plain where drafting pays. For the same reason the rounds that try another K (rarely: every
policy.explore_every rounds at a size, the gap doubling while tries change nothing) try the one that would
be best were every row's acceptance one standard error higher than estimated (at most policy.explore_reach
past the best), if that differs from the best; else the least measured neighbour of the best, so the cost
line keeps being measured. A try drafts every Auto K row, so a row left plain is measured again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..draft_stop import ConfidenceModel, StopCosts
from ..pass_costs import expected_tokens
from ..policy import DEFAULT_POLICY, SpeculationPolicy
from .batch_choice import BatchShape, best_choice, drafted_for, plain_below
from .batch_costs import CostRow, CostTable, SizeCosts


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

    def add_counts(self, accepted: float, checked: float) -> None:
        """Add counts as they are, undecayed (a request's drafts before it joined)."""
        self.accepted, self.checked = self.accepted + accepted, self.checked + checked

    @property
    def rate(self) -> float:
        """The estimated probability that the next draft is accepted."""
        return min(self.accepted / self.checked, 0.999) if self.checked else 0.5

    @property
    def hopeful(self) -> float:
        """The rate one standard error above the estimate (what a round that explores assumes)."""
        p = self.rate
        return min(p + math.sqrt(p * (1.0 - p) / max(self.checked, 1.0)), 0.999)


@dataclass(frozen=True)
class BatchPlan:
    """The next round: its K, which Auto K rows draft (the others K = 0), its early stop (None: none), and the K
    the round was priced at (`priced`: K without the stop's reach, as deep as rows the stop cannot cut draft)."""

    k: int
    drafting: tuple[bool, ...]
    stop: tuple[StopCosts, ConfidenceModel] | None
    priced: int


class BatchK:
    """Chooses each batched round's K and drafting rows from the measured costs and each row's acceptance."""

    def __init__(self, k_max: int | None = None, policy: SpeculationPolicy = DEFAULT_POLICY):
        """k_max: the deepest a round drafts (None: the policy's batch_k_max)."""
        self.policy = policy
        self.k_max = policy.batch_k_max if k_max is None else k_max
        self.costs = CostTable(policy)
        self.last_k = min(2, self.k_max)
        self.last_rows: tuple[bool, ...] | None = None  # which rows the last choice drafts (None: every row)
        self.shape: BatchShape | None = None  # the batch plan_rows plans for (None: every row Auto K, alone)
        self.pooled = RowAcceptance(policy=policy)  # every row's drafts, decayed: where a new row starts
        self.by_mode: dict[str, RowAcceptance] = {}  # each mode's rows' drafts: where a new row of that mode starts
        self.confidence = ConfidenceModel(policy=policy)  # acceptance by draft confidence, every row's (batch_stop.py)

    @property
    def timings(self) -> dict[int, SizeCosts]:
        """The costs measured per batch size."""
        return self.costs.sizes

    def table(self) -> list[CostRow]:
        """Every measured cost with its 95% interval (batch_costs.py)."""
        return self.costs.table()

    def plan_rows(self, rates: list[float], top: int, hopeful: list[float], shape: BatchShape) -> BatchPlan:
        """plan() for a batch of this shape, and which of its Auto K rows (as in rates) draft."""
        self.shape, self.last_rows = shape, None
        try:
            priced = self.choose(rates, min(top, self.k_max), hopeful)
            k, stop = self._reach(priced, rates, top)
        finally:
            self.shape = None
        rows = self.last_rows if self.last_rows is not None and len(self.last_rows) == len(rates) else None
        return BatchPlan(k, rows if rows is not None and k else (k > 0,) * len(rates), stop, priced)

    def plan(
        self, rates: list[float], top: int, hopeful: list[float]
    ) -> tuple[int, tuple[StopCosts, ConfidenceModel] | None]:
        """The next round's K and, once its costs are measured at this size, the early stop that may end its
        drafting sooner (the K is then policy.stop_reach deeper: the stop cuts what does not pay)."""
        return self._reach(self.choose(rates, min(top, self.k_max), hopeful), rates, top)

    def _reach(self, k: int, rates: list[float], top: int) -> tuple[int, tuple[StopCosts, ConfidenceModel] | None]:
        """The chosen K, policy.stop_reach deeper where the early stop is measured, and that stop."""
        stop = self._stop(rates, k)
        return (min(top, self.k_max, k + self.policy.stop_reach), stop) if stop is not None else (k, None)

    def _shape_of(self, rates: list[float]) -> BatchShape:
        shape = self.shape
        return shape if shape is not None and len(shape.alone) == len(rates) else BatchShape.uniform(len(rates))

    def _stop(self, rates: list[float], k: int) -> tuple[StopCosts, ConfidenceModel] | None:
        """The early stop's costs in tokens: a verify position (keep a step) and a draft step plus one (draft
        another), each for the whole batch, times the rate it is expected to reach at K."""
        shape = self._shape_of(rates)
        size = self.costs.sizes.get(shape.rows)
        if k == 0 or size is None or len(size.verify.cells) < 2:
            return None
        rows = self.last_rows if self.last_rows is not None and len(self.last_rows) == len(rates) else None
        drafting = rows if rows is not None and any(rows) else (True,) * len(rates)
        ran = drafted_for(shape, drafting)
        verify_line, cost = size.verify.line(size.verify.cells), self.costs.cost(shape.rows, k, ran)
        per_draft = self._per_draft(size, ran, verify_line)
        if verify_line is None or per_draft is None or not cost:
            return None
        tokens = sum(expected_tokens(a, k) if d else 1.0 for a, d in zip(rates, drafting)) + shape.others
        rate = tokens / cost
        self.confidence.overall = self.pooled.rate
        return StopCosts(rate * verify_line[1], rate * per_draft), self.confidence

    def _per_draft(self, size: SizeCosts, ran: int, verify_line: tuple[float, float] | None) -> float | None:
        """What one more draft adds to a round: a draft step and a verify position (before a draft step is
        measured: the slope of the whole rounds' line)."""
        step = self.costs.draft_step(ran)
        if step is not None and verify_line is not None:
            return step + verify_line[1]
        line = size.round_line()
        return None if line is None else line[1]

    def new_row(self, accepted: int = 0, checked: int = 0, mode: str | None = None) -> RowAcceptance:
        """A joining row's acceptance: its mode's pooled rate where rows of that mode drafted enough (a copy from the
        prompt and a draft model's guess are accepted at very different rates), else every row's, weighing
        policy.pooled_weight drafts; then its own counts (a request that ran alone before it joined: its accepted
        and checked drafts)."""
        pool = self._mode_pool(mode) or self.pooled
        weight = min(self.policy.pooled_weight, pool.checked)
        row = RowAcceptance(pool.rate * weight, weight, self.policy) if weight else RowAcceptance(policy=self.policy)
        if checked:
            for counts in (row, *self._pools(mode)):
                counts.add_counts(accepted, checked)
        return row

    def observe_row(self, row: RowAcceptance, drafted: int, accepted: int, mode: str | None = None) -> None:
        """Add one row's round (or history) to its own, its mode's and the pooled acceptance."""
        row.observe(drafted, accepted)
        for shared in self._pools(mode):
            shared.observe(drafted, accepted)

    def pooled_rate(self, mode: str | None = None) -> float:
        """Where a new row of this mode starts: its mode's pooled rate once that has evidence, else every row's."""
        return (self._mode_pool(mode) or self.pooled).rate

    def _mode_pool(self, mode: str | None) -> RowAcceptance | None:
        """This mode's pooled acceptance once it weighs as much as a new row takes from it (policy.pooled_weight
        drafts): a row started from one or two drafts' rate would read 0 or 1, where every row's pool has a prior."""
        pool = self.by_mode.get(mode) if mode is not None else None
        return pool if pool is not None and pool.checked >= self.policy.pooled_weight else None

    def _pools(self, mode: str | None) -> list[RowAcceptance]:
        """The pooled acceptance, and this mode's (made empty the first time)."""
        if mode is None:
            return [self.pooled]
        return [self.pooled, self.by_mode.setdefault(mode, RowAcceptance(0.0, 0.0, self.policy))]

    def choose(self, rates: list[float], k_max: int | None = None, hopeful: list[float] | None = None) -> int:
        """The K for the next round of these Auto K rows (0: a plain step), up to k_max; last_rows says which
        of them draft. A batch size's first round drafts; its second is plain, so plain decoding's cost there
        is measured, not guessed (a size whose costs were learned, knowledge.py, needs neither). `hopeful`:
        each row's rate one standard error up (RowAcceptance.hopeful), for the rounds that explore. A batch
        drafts at most its own k_max, whatever its rows allow alone. A size new to the table starts plain where
        the largest smaller measured size would decode these rows plainly (batch_choice.plain_below)."""
        top = self.k_max if k_max is None else min(k_max, self.k_max)
        shape, every = self._shape_of(rates), (True,) * len(rates)
        size = self.costs.sizes.get(shape.rows)
        best = best_choice(self.costs, rates, shape, top) if size is not None and 0 in size.rounds.cells else None
        if size is None or not size.rounds.cells or best is None:
            measuring = size is not None and size.rounds.cells
            k = 0 if measuring or plain_below(self.costs, rates, shape, top) else min(self.last_k, top)
            self.last_rows = every if k else (False,) * len(rates)
            return k
        k, self.last_rows = best.k, best.drafting
        if size.explore_due(best.k):
            k = size.tried = self._explore(size, best.k, hopeful or rates, shape, top)
            self.last_rows = every if k else (False,) * len(rates)
        self.last_k = k if k > 0 else self.last_k
        return k

    def _explore(self, size: SizeCosts, best: int, hopeful: list[float], shape: BatchShape, top: int) -> int:
        """The K a round that explores tries instead of `best`."""
        hoped = best_choice(self.costs, hopeful, shape, top)
        if hoped is not None and (tried := min(hoped.k, best + self.policy.explore_reach)) != best:
            return tried
        near = [k for k in (best - 1, best + 1) if 0 <= k <= top]
        return min(near, key=lambda k: size.weights.get(k, 0.0)) if near else best

    def observe(
        self, rows: int, k: int, seconds: float, verify_s: float | None = None, drafters: float | None = None
    ) -> None:
        """Add one round's time (and its verify pass's): `rows` sequences, K drafts each, the draft steps run for
        `drafters` of them (a count; a float, as SharedBatchK passes every figure on)."""
        self.costs.observe(rows, k, seconds, verify_s, None if drafters is None else int(round(drafters)))


def checked_drafts(accepted: int, drafted: int, rounds: int) -> tuple[int, int]:
    """(accepted, checked) drafts from a request's totals (each round checks up to its first refusal; a round
    that took every draft counts as one that missed: the totals cannot tell)."""
    return accepted, accepted + min(rounds, drafted - accepted)
