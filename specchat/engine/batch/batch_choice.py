"""A batched round's K and which of its Auto K rows draft it: the most expected tokens per second.

A round of K drafts yields each drafting row expected_tokens(rate, K) tokens and every other row one, and
costs a verify pass over every row at depth K plus K draft steps for the rows the drafter runs for
(CostTable.cost). Whether a row's own K = 0 saves anything depends on its drafter: a draft-model row is fed
in the draft model's run whenever the round drafts (so the draft model keeps up with its sequence), and a
lookup row drafts for free (no deeper than its match), so both always draft; an MTP row with K = 0 leaves
the head's run (a DFlash row its block pass), so those rows draft by acceptance: for every K, the best first
m of them, m = 0 .. all.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from ..modes import SpecMode
from ..pass_costs import expected_tokens
from .batch_costs import CostTable

ALONE_MODES = (SpecMode.MTP, SpecMode.DFLASH)  # a row of these with K = 0 leaves its drafter's run


@dataclass(frozen=True)
class BatchShape:
    """What a round's rows cost to draft for, beside the Auto K rows' acceptance."""

    rows: int  # every row of the batch: the verify pass runs them all
    alone: tuple[bool, ...]  # per Auto K row: its K = 0 takes it out of the draft steps (else it costs nothing)
    shared: int = 0  # rows the draft steps run for whenever the round drafts, whatever their own K
    others: float = 0.0  # tokens a round yields from the rows whose K is not the controller's
    reach: tuple[int | None, ...] = ()  # per Auto K row: the most drafts it can take this round (None: any)

    def depth(self, i: int, k: int) -> int:
        """How many drafts Auto K row i takes in a round of K (a lookup row: no more than its match offers)."""
        most = self.reach[i] if i < len(self.reach) else None
        return k if most is None else min(k, most)

    @classmethod
    def uniform(cls, rows: int) -> BatchShape:
        """Every row Auto K, each drafting alone."""
        return cls(rows, (True,) * rows)


@dataclass(frozen=True)
class Choice:
    """One candidate for the next round: its K, which Auto K rows draft, expected tokens and seconds."""

    k: int
    drafting: tuple[bool, ...]
    tokens: float
    seconds: float

    @property
    def rate(self) -> float:
        """Expected tokens per second."""
        return self.tokens / self.seconds


def choices(costs: CostTable, rates: list[float], shape: BatchShape, top: int) -> Iterator[Choice]:
    """Every candidate the table can price: plain, then each K up to `top` with each first m of the rows that
    draft alone (by acceptance, best first; the others always draft)."""
    n = len(rates)
    free = [i for i in range(n) if not shape.alone[i]]
    ranked = sorted((i for i in range(n) if shape.alone[i]), key=lambda i: -rates[i])
    plain = costs.cost(shape.rows, 0, 0)
    if plain is not None and plain > 0:
        yield Choice(0, (False,) * n, n + shape.others, plain)
    for k in range(1, top + 1):
        for m in range(len(ranked) + 1):
            members = free + ranked[:m]
            seconds = costs.cost(shape.rows, k, shape.shared + m)
            if not members or seconds is None or seconds <= 0:
                continue
            tokens = sum(expected_tokens(rates[i], shape.depth(i, k)) for i in members) + n - len(members)
            tokens += shape.others
            yield Choice(k, tuple(i in members for i in range(n)), tokens, seconds)


def best_choice(costs: CostTable, rates: list[float], shape: BatchShape, top: int) -> Choice | None:
    """The candidate with the most expected tokens per second (the first, on a tie: plainer, fewer rows)."""
    return max(choices(costs, rates, shape, top), key=lambda c: c.rate, default=None)


def plain_lead(costs: CostTable, rates: list[float], shape: BatchShape, top: int) -> float | None:
    """How many times faster plain decoding is expected to be than the best drafting round (None: either unpriced)."""
    every = list(choices(costs, rates, shape, top))
    plain = next((c.rate for c in every if c.k == 0), None)
    drafting = max((c.rate for c in every if c.k > 0), default=None)
    return None if plain is None or not drafting else plain / drafting


def plain_below(costs: CostTable, rates: list[float], shape: BatchShape, top: int) -> bool:
    """Whether the largest smaller batch measured (CostTable.measured_below) would decode these rows plainly,
    ahead of drafting by policy.smaller_size_margin: drafts save no more in a bigger batch, and one size's noise
    must not decide the next."""
    below = costs.measured_below(shape.rows)
    lead = None if below is None else plain_lead(costs, rates, replace(shape, rows=below), top)
    return lead is not None and lead >= 1 + costs.policy.smaller_size_margin


def batch_shape(
    modes: list[str], own_k: list[int | None], rates: list[float], reach: list[int | None] | None = None
) -> BatchShape:
    """A batch's shape from every row's mode, own K (None: an Auto K row's, the controller's), acceptance and the
    most drafts each row can take this round (None: any; a lookup row's match)."""
    auto = [i for i, k in enumerate(own_k) if k is None]
    own = [(i, 0 if modes[i] == SpecMode.BASELINE else k) for i, k in enumerate(own_k) if k is not None]
    shared = sum(modes[i] == SpecMode.DRAFT for i in auto)
    shared += sum(modes[i] == SpecMode.DRAFT or (modes[i] in ALONE_MODES and k > 0) for i, k in own)
    others = sum(expected_tokens(rates[i], k) for i, k in own)
    reaches = tuple(reach[i] for i in auto) if reach is not None else ()
    return BatchShape(len(modes), tuple(modes[i] in ALONE_MODES for i in auto), shared, others, reaches)


def drafted_for(shape: BatchShape, drafting: tuple[bool, ...]) -> int:
    """The rows the draft steps run for when these Auto K rows draft."""
    if not any(drafting):
        return 0
    return shape.shared + sum(d and a for d, a in zip(drafting, shape.alone))
