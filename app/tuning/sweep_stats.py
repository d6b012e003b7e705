"""Robust statistics for sweep cells: median, MAD-based CV, the noisy flag."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

MAD_TO_SIGMA = 1.4826  # scales the MAD to the standard deviation of a normal distribution
NOISY_CV = 0.05


def median(values: Sequence[float]) -> float:
    """The median; 0.0 for no values."""
    return float(statistics.median(values)) if values else 0.0


def mad(values: Sequence[float]) -> float:
    """Median absolute deviation from the median."""
    if not values:
        return 0.0
    mid = median(values)
    return median([abs(v - mid) for v in values])


def robust_cv(values: Sequence[float]) -> float:
    """1.4826 x MAD / median; infinite when the median is 0 but the values spread."""
    mid = median(values)
    spread = MAD_TO_SIGMA * mad(values)
    if mid == 0:
        return 0.0 if spread == 0 else math.inf
    return spread / abs(mid)


def is_noisy(cv: float) -> bool:
    """True when a cell's robust CV is above NOISY_CV (5%)."""
    return cv > NOISY_CV


def speedup_pct(value: float, baseline: float) -> float | None:
    """How much faster value is than baseline, in percent; None without a baseline."""
    if baseline <= 0:
        return None
    return (value / baseline - 1.0) * 100.0
