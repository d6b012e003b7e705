"""Fixed-size buffers of recent readings, and the rolling / cumulative figures the dashboard plots."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

DEFAULT_ROLLING_WINDOW = 8

Numbers = Sequence[float] | np.ndarray  # a list of numbers, or a 1-d array


class Round(Protocol):
    """What RoundSeries reads of a round (specchat.engine's RoundResult)."""

    @property
    def index(self) -> int: ...
    @property
    def drafted(self) -> int: ...
    @property
    def accepted(self) -> int: ...
    @property
    def emitted(self) -> int: ...
    @property
    def draft_s(self) -> float: ...
    @property
    def verify_s(self) -> float: ...


class RingBuffer:
    """The latest `capacity` rows of `width` floats; appending to a full buffer drops the oldest row."""

    def __init__(self, capacity: int, width: int = 1):
        if capacity < 1 or width < 1:
            raise ValueError(f"a ring buffer needs capacity and width >= 1, got {capacity} and {width}")
        self.capacity = capacity
        self.width = width
        self._rows = np.full((capacity, width), np.nan)
        self._start = 0
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def append(self, *values: float | None) -> np.ndarray | None:
        """Add one row (None becomes NaN); returns the row that dropped out, or None."""
        if len(values) != self.width:
            raise ValueError(f"this buffer holds rows of {self.width} values, got {len(values)}")
        row = [np.nan if v is None else float(v) for v in values]
        dropped = None
        if self._size < self.capacity:
            self._rows[(self._start + self._size) % self.capacity] = row
            self._size += 1
        else:
            dropped = self._rows[self._start].copy()
            self._rows[self._start] = row
            self._start = (self._start + 1) % self.capacity
        return dropped

    def array(self) -> np.ndarray:
        """Every row, oldest first, as a (len, width) copy."""
        order = (self._start + np.arange(self._size)) % self.capacity
        return self._rows[order].copy()

    def column(self, index: int = 0) -> np.ndarray:
        """One column, oldest first."""
        return self.array()[:, index]

    def last(self) -> tuple[float, ...] | None:
        """The newest row, or None when empty."""
        if not self._size:
            return None
        return tuple(self._rows[(self._start + self._size - 1) % self.capacity].tolist())

    def clear(self) -> None:
        """Forget every row."""
        self._rows[:] = np.nan
        self._start = self._size = 0


def safe_ratio(numerators: Numbers, denominators: Numbers) -> np.ndarray:
    """numerators / denominators element-wise; NaN where a denominator is not positive."""
    num = np.asarray(numerators, dtype=float)
    den = np.asarray(denominators, dtype=float)
    out = np.full(num.shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def rolling_rate(numerators: Numbers, denominators: Numbers, window: int) -> np.ndarray:
    """At each point, sum of the last `window` numerators over the sum of their denominators."""
    if window < 1:
        raise ValueError(f"a rolling window must be at least 1, got {window}")
    num_sums = _window_sums(np.asarray(numerators, dtype=float), window)
    den_sums = _window_sums(np.asarray(denominators, dtype=float), window)
    return safe_ratio(num_sums, den_sums)


def _window_sums(values: np.ndarray, window: int) -> np.ndarray:
    totals = np.concatenate(([0.0], np.cumsum(values)))
    ends = np.arange(1, len(values) + 1)
    return totals[ends] - totals[np.maximum(ends - window, 0)]


def cumulative_ratio(
    numerators: Numbers, denominators: Numbers, offset_num: float = 0.0, offset_den: float = 0.0
) -> np.ndarray:
    """At each point, (offset + running sum of numerators) / (offset + running sum of denominators)."""
    num = offset_num + np.cumsum(np.asarray(numerators, dtype=float))
    den = offset_den + np.cumsum(np.asarray(denominators, dtype=float))
    return safe_ratio(num, den)


class RoundSeries:
    """Speculative rounds of one generation; figures stay exact after old rounds drop out."""

    FIELDS = ("index", "drafted", "accepted", "emitted", "seconds")

    def __init__(self, capacity: int = 4096, window: int = DEFAULT_ROLLING_WINDOW):
        self.buffer = RingBuffer(capacity, len(self.FIELDS))
        self.window = window
        self._dropped = dict.fromkeys(self.FIELDS[1:], 0.0) | {"rounds": 0}

    def __len__(self) -> int:
        return len(self.buffer)

    def add(self, round_result: Round) -> None:
        """Add a RoundResult (anything with index, drafted, accepted, emitted, draft_s, verify_s)."""
        r = round_result
        dropped = self.buffer.append(r.index, r.drafted, r.accepted, r.emitted, r.draft_s + r.verify_s)
        if dropped is not None:
            for position, name in enumerate(self.FIELDS[1:], start=1):
                self._dropped[name] += dropped[position]
            self._dropped["rounds"] += 1

    def clear(self) -> None:
        """Forget every round (a new generation starts)."""
        self.buffer.clear()
        self._dropped = dict.fromkeys(self.FIELDS[1:], 0.0) | {"rounds": 0}

    def column(self, name: str) -> np.ndarray:
        """One field of the kept rounds, oldest first."""
        return self.buffer.column(self.FIELDS.index(name))

    def indices(self) -> np.ndarray:
        """The rounds' index numbers (the x axis)."""
        return self.column("index")

    def tokens_per_s(self) -> np.ndarray:
        """Each round's decode speed: emitted / (draft_s + verify_s)."""
        return safe_ratio(self.column("emitted"), self.column("seconds"))

    def rolling_tokens_per_s(self) -> np.ndarray:
        """Emitted tokens over time spent, across the last `window` rounds."""
        return rolling_rate(self.column("emitted"), self.column("seconds"), self.window)

    def acceptance(self) -> np.ndarray:
        """Each round's accepted / drafted (NaN when nothing was drafted)."""
        return safe_ratio(self.column("accepted"), self.column("drafted"))

    def cumulative_acceptance(self) -> np.ndarray:
        """Accepted / drafted over every round so far, at each round."""
        return cumulative_ratio(
            self.column("accepted"), self.column("drafted"), self._dropped["accepted"], self._dropped["drafted"]
        )

    def mean_accepted_per_round(self) -> np.ndarray:
        """Accepted tokens per round over every round so far, at each round."""
        return cumulative_ratio(
            self.column("accepted"), np.ones(len(self)), self._dropped["accepted"], self._dropped["rounds"]
        )

    def totals(self) -> dict[str, float]:
        """Rounds, drafted, accepted, emitted and seconds over every round added, dropped ones too."""
        kept = {name: float(np.sum(self.column(name))) for name in self.FIELDS[1:]}
        totals = {name: kept[name] + self._dropped[name] for name in kept}
        totals["rounds"] = len(self) + self._dropped["rounds"]
        return totals
