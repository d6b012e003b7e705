"""Robust statistics for sweep cells: median, MAD-based CV, the noisy flag."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

MAD_TO_SIGMA = 1.4826  # scales the MAD to the standard deviation of a normal distribution
NOISY_CV = 0.05
MIN_REPS_FOR_CV = 3  # a spread of fewer runs says nothing: its CV is "n/a" (None)
BEST_RULE = (
    "a K is best only when its median x (1 - n) beats plain decoding's median, n = max(5%, CV of K + "
    "CV of plain), a CV of n/a (fewer than 3 reps) counting as 5%; otherwise the best choice is Off"
)
DYNAMIC_RULE = (
    "dynamic (auto K) is best only when its median x (1 - n) beats both plain decoding's median and the "
    "fastest fixed K's median, n taken the same way from the two cells compared; otherwise the best fixed "
    "K, or Off, as above"
)


def median(values: Sequence[float]) -> float:
    """The median; 0.0 for no values."""
    return float(statistics.median(values)) if values else 0.0


def mad(values: Sequence[float]) -> float:
    """Median absolute deviation from the median."""
    if not values:
        return 0.0
    mid = median(values)
    return median([abs(v - mid) for v in values])


def robust_cv(values: Sequence[float]) -> float | None:
    """1.4826 x MAD / median; infinite when the median is 0 but the values spread; None below 3 values."""
    if len(values) < MIN_REPS_FOR_CV:
        return None
    mid = median(values)
    spread = MAD_TO_SIGMA * mad(values)
    if mid == 0:
        return 0.0 if spread == 0 else math.inf
    return spread / abs(mid)


def is_noisy(cv: float | None) -> bool:
    """True when a cell's robust CV is above NOISY_CV (5%); an unknown CV (None) is not flagged."""
    return cv is not None and cv > NOISY_CV


def beats(speed: float, cv: float | None, other_speed: float, other_cv: float | None) -> bool:
    """BEST_RULE's test: a cell's median, lowered by the noise of both cells, still above the other's median."""
    noise = max(NOISY_CV, (NOISY_CV if cv is None else cv) + (NOISY_CV if other_cv is None else other_cv))
    return other_speed > 0 and speed * (1 - noise) > other_speed


def cv_text(cv: float | None) -> str:
    """A CV as '3.2%', 'inf', or 'n/a' with fewer than MIN_REPS_FOR_CV reps."""
    if cv is None:
        return "n/a"
    return f"{cv * 100:.1f}%" if math.isfinite(cv) else "inf"


def speedup_pct(value: float, baseline: float) -> float | None:
    """How much faster value is than baseline, in percent; None without a baseline."""
    if baseline <= 0:
        return None
    return (value / baseline - 1.0) * 100.0
