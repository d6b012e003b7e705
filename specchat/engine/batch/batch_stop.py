"""Where a batched round stops drafting: when the drafter is unsure for the batch as a whole.

One draft step drafts a token for every row, and the verify pass is padded to the deepest row, so the
batch drafts to one depth. Each step's token of row b is accepted with the chance that row's drafts so
far and this one are all accepted, from the drafter's confidence (the solo loop's ConfidenceModel,
draft_stop.py); the step is kept while the rows' chances add up to more than one more verify position
costs, and another step is drafted while the chances of the next tokens are expected to add up to more
than a draft step plus that position. Both costs are in tokens: seconds times the rate the batch is
expected to reach. Only draft probabilities decide, so verification stays exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..draft_stop import ConfidenceModel, StopCosts
from ..modes import DraftOutcome


@dataclass
class BatchStop:
    """One draft run's early stop over its rows: their entries, chances so far and confidences."""

    costs: StopCosts
    model: ConfidenceModel
    entries: list[DraftOutcome]  # per row: the outcome before its first draft ("full" or "miss")
    prefixes: list[float] = field(default_factory=list)
    confidences: list[list[float]] = field(default_factory=list)
    stopped_early: bool = False

    def __post_init__(self) -> None:
        self.prefixes = [1.0] * len(self.entries)
        self.confidences = [[] for _ in self.entries]

    def take(self, confidences: list[float]) -> tuple[bool, bool]:
        """A draft step gave each row a token with these confidences: (keep the step, draft another)."""
        index = len(self.confidences[0])
        chances = [
            prefix * self.model.p(entry if index == 0 else DraftOutcome.MATCH, c)
            for prefix, entry, c in zip(self.prefixes, self.entries, confidences)
        ]
        if index > 0 and sum(chances) < self.costs.keep_at:
            self.stopped_early = True
            return False, False
        for row, c in zip(self.confidences, confidences):
            row.append(c)
        self.prefixes = chances
        more = sum(ch * self.model.p_after(c) for ch, c in zip(chances, confidences)) >= self.costs.go_on_at
        self.stopped_early = not more
        return True, more
