"""The batch's measured costs, per batch size and per drafting rows, each with a 95% interval.

A round of K drafts costs a verify pass over every row, measured per (batch size, K), and K draft steps,
measured per drafting rows m: the rows the draft model (or the target's MTP head) ran for (draft_s / K).
A plain round (K = 0) is measured on its own: one token a row, nothing to roll back, no point on the line
in K. A K not measured at a size is read off the line in K through the measured ones, a row count not
measured off the line in rows (while one count is measured: in proportion to the rows). Whole round times are
kept per (size, K) too: they decide for callers that time no verify pass (then no draft step is measured
either), and give the early stop its slope before one is. A size not yet measured is judged, where drafts lost,
by the largest smaller size that was (`measured_below`): drafts save less as a batch grows.

Every cell keeps decayed sums of its measurements (each decays by policy.batch_decay when its cell measures
again: about the last ten), so it gives a mean and a 95% interval, mean ± 1.96 sd / √n, n the decayed
count's effective size (Σw)² / Σw².
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from ..policy import SpeculationPolicy


@dataclass
class Cell:
    """Decayed sums of one cost's measurements (seconds): weights, squared weights, values, squared values."""

    weight: float = 0.0
    weight_sq: float = 0.0
    total: float = 0.0
    total_sq: float = 0.0

    def add(self, seconds: float, decay: float) -> None:
        """Add one measurement; the earlier ones weigh `decay` as much as before."""
        self.weight = self.weight * decay + 1.0
        self.weight_sq = self.weight_sq * decay * decay + 1.0
        self.total = self.total * decay + seconds
        self.total_sq = self.total_sq * decay + seconds * seconds

    @property
    def mean(self) -> float:
        """The decayed mean (seconds)."""
        return self.total / self.weight if self.weight else 0.0

    @property
    def count(self) -> float:
        """The effective number of measurements the decayed mean stands on."""
        return self.weight * self.weight / self.weight_sq if self.weight_sq else 0.0

    def interval(self, z: float = 1.96) -> tuple[float, float]:
        """(low, high) of the mean's interval (z = 1.96: 95%); (0, inf) on a single measurement."""
        n = self.count
        if n <= 1.0 + 1e-9:
            return 0.0, math.inf
        variance = max(self.total_sq / self.weight - self.mean**2, 0.0) * n / (n - 1.0)
        half = z * math.sqrt(variance / n)
        return self.mean - half, self.mean + half


@dataclass
class Curve:
    """Cells keyed by a count (K, or drafting rows), and lines through them."""

    decay: float
    cells: dict[int, Cell] = field(default_factory=dict)

    def add(self, x: int, seconds: float) -> None:
        """Add one measurement at x."""
        self.cells.setdefault(x, Cell()).add(seconds, self.decay)

    def mean(self, x: int) -> float | None:
        """The measured mean at x, None where nothing was measured."""
        cell = self.cells.get(x)
        return cell.mean if cell is not None else None

    def line(self, xs: Iterable[int]) -> tuple[float, float] | None:
        """(intercept, slope) by weighted least squares through the measured cells at these xs (slope >= 0);
        None under two."""
        used = {x: self.cells[x] for x in xs if x in self.cells}
        if len(used) < 2:
            return None
        total = sum(c.weight for c in used.values())
        mx = sum(c.weight * x for x, c in used.items()) / total
        my = sum(c.weight * c.mean for c in used.values()) / total
        var = sum(c.weight * (x - mx) ** 2 for x, c in used.items())
        slope = max(sum(c.weight * (x - mx) * (c.mean - my) for x, c in used.items()) / var, 0.0)
        return my - slope * mx, slope


@dataclass
class SizeCosts:
    """One batch size's whole rounds and verify passes per K, and when it next tries another K than the best."""

    policy: SpeculationPolicy  # its memory, explore gaps and prior draft share (policy.py)
    rounds: Curve = field(init=False)
    verify: Curve = field(init=False)  # drafting rounds only: a plain round's verify pass is the round
    since: int = 0  # rounds at this size since the last try of another K
    gap: int = field(init=False)  # rounds between tries: doubles while tries change nothing
    tried: int | None = None  # the K of the last try, until the next choice says whether it became the best

    def __post_init__(self) -> None:
        self.rounds, self.verify = Curve(self.policy.batch_decay), Curve(self.policy.batch_decay)
        self.gap = self.policy.explore_every

    @property
    def sums(self) -> dict[int, float]:
        """Each K's decayed sum of whole round times."""
        return {k: c.total for k, c in self.rounds.cells.items()}

    @property
    def weights(self) -> dict[int, float]:
        """Each K's decayed count of whole rounds."""
        return {k: c.weight for k, c in self.rounds.cells.items()}

    def explore_due(self, best: int) -> bool:
        """Whether this round tries another K than `best` (after the last try: its gap halves back to
        policy.explore_every if the try became the best, else doubles)."""
        if self.tried is not None:
            every, most = self.policy.explore_every, self.policy.max_explore_gap
            self.gap = every if best == self.tried else min(2 * self.gap, most)
            self.tried = None
        self.since += 1
        if self.since < self.gap:
            return False
        self.since = 0
        return True

    @property
    def measured(self) -> bool:
        """Whether this size ran both a plain round and a drafting round (its choice is priced, not guessed)."""
        return 0 in self.rounds.cells and any(k > 0 for k in self.rounds.cells)

    def round_cost(self, k: int) -> float | None:
        """A whole round's expected time at K: measured, else (K >= 1) off round_line(); None for a plain
        round never measured."""
        if (mean := self.rounds.mean(k)) is not None:
            return mean
        line = self.round_line()
        return None if k == 0 or line is None else line[0] + line[1] * k

    def round_line(self) -> tuple[float, float] | None:
        """(intercept, seconds per draft) through the drafting rounds; from policy.prior_draft_share while one
        K is measured; None before any."""
        drafting = [k for k in self.rounds.cells if k > 0]
        if len(drafting) == 1:
            (k,) = drafting
            base = self.rounds.cells[k].mean / (1.0 + self.policy.prior_draft_share * k)
            return base, base * self.policy.prior_draft_share
        line = self.rounds.line(drafting)
        return None if line is None else (max(line[0], 1e-9), line[1])

    def verify_cost(self, k: int) -> float | None:
        """A verify pass's expected time at K >= 1: measured, else off the line through the measured Ks (one K:
        the line through it and the plain round); None before any drafting round."""
        if (mean := self.verify.mean(k)) is not None:
            return mean
        line = self.verify.line(self.verify.cells)
        if line is None and len(self.verify.cells) == 1 and (plain := self.rounds.mean(0)) is not None:
            ((at, cell),) = self.verify.cells.items()
            line = plain, max(cell.mean - plain, 0.0) / at
        return None if line is None else max(line[0] + line[1] * k, 1e-9)


class CostRow(NamedTuple):
    """One measured cell: what it times ("round", "verify" or "draft step"), batch rows (drafting rows for a
    draft step), K, its mean and 95% interval (seconds), and its effective count."""

    what: str
    rows: int
    k: int
    mean_s: float
    lo: float
    hi: float
    n: float


class CostTable:
    """Every batch size's costs, and a draft step's per drafting rows."""

    def __init__(self, policy: SpeculationPolicy):
        self.policy = policy
        self.sizes: dict[int, SizeCosts] = {}
        self.draft = Curve(policy.batch_decay)  # one draft step's seconds, by the rows it drafted for

    def size(self, rows: int) -> SizeCosts:
        """The costs at this batch size (made empty the first time)."""
        return self.sizes.setdefault(rows, SizeCosts(self.policy))

    def measured_below(self, rows: int) -> int | None:
        """The largest batch size under `rows`, of two rows or more, that ran both a plain and a drafting round
        (None: none). A bigger batch verifies nearer the compute roof, so drafts save there no more than at this
        size. A batch of one shares nothing and runs mostly while a newcomer is read: it says nothing of two."""
        return max((n for n, size in self.sizes.items() if 2 <= n < rows and size.measured), default=None)

    def observe(self, rows: int, k: int, seconds: float, verify_s: float | None, drafters: int | None) -> None:
        """Add one round: `rows` rows, K drafts, `seconds` in all, `verify_s` of them its verify pass (None:
        not timed apart), `drafters` the rows its draft steps ran for (None: not counted)."""
        size = self.size(rows)
        size.rounds.add(k, seconds)
        if verify_s is None or k == 0:
            return
        size.verify.add(k, verify_s)
        if drafters is not None:
            self.draft.add(drafters, max(seconds - verify_s, 0.0) / k)

    def draft_step(self, drafters: int) -> float | None:
        """One draft step's expected seconds for this many rows; None before any was measured (0 for no rows)."""
        if (mean := self.draft.mean(drafters)) is not None or not self.draft.cells:
            return mean
        if drafters == 0:
            return 0.0
        counts = [x for x in self.draft.cells if x > 0]
        line = self.draft.line(counts)
        if line is not None:
            return max(line[0], 0.0) + line[1] * drafters
        if not counts:
            return None
        (measured,) = counts  # one count measured: a row's share of a step is taken as its own (the CPU's case)
        return self.draft.cells[measured].mean * drafters / measured

    def cost(self, rows: int, k: int, drafters: int | None) -> float | None:
        """A round's expected seconds: its verify pass and K draft steps once a draft step was measured, else the
        whole round's own estimate; None where nothing tells it."""
        size = self.sizes.get(rows)
        if size is None:
            return None
        step = None if k == 0 or drafters is None else self.draft_step(drafters)
        verify = size.verify_cost(k) if step is not None else None
        return verify + k * step if verify is not None and step is not None else size.round_cost(k)

    def table(self) -> list[CostRow]:
        """Every measured cell, by kind, rows and K."""
        out = []
        for rows in sorted(self.sizes):
            for what, curve in (("round", self.sizes[rows].rounds), ("verify", self.sizes[rows].verify)):
                out += [_row(what, rows, k, curve.cells[k]) for k in sorted(curve.cells)]
        return out + [_row("draft step", m, 1, self.draft.cells[m]) for m in sorted(self.draft.cells)]


def _row(what: str, rows: int, k: int, cell: Cell) -> CostRow:
    lo, hi = cell.interval()
    return CostRow(what, rows, k, cell.mean, lo, hi, cell.count)
