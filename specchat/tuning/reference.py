"""The plain-decode reference that "vs plain" divides by: which one, how noisy, how old, and whether stale.

Sources, best first: this session's own plain (speculation off) replies on the same target with the same
sampling settings, timed by the engine's decode clock like every reply; then an explicit measurement
(this session, or cached from an earlier one). A reference is stale when it is older than
REFERENCE_MAX_AGE_S, used other sampling settings, or was taken on another power source; a stale one
is still shown, with the reason, never silently used as if it were fresh.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

REFERENCE_MAX_AGE_S = 30 * 60  # older than this a reference is stale (thermals, other apps, settings drift)
DEFAULT_NOISE = 0.05  # relative half-width of the band with fewer than MIN_REPS_FOR_SPREAD plain replies
MIN_REPS_FOR_SPREAD = 3
MIN_REPLY_TOKENS = 16  # shorter plain replies time mostly their start-up, not decoding
CONTEXT_FACTOR = 2.0  # a plain reply is comparable when its context is within this factor of the reply's
SESSION, MEASURED, EARLIER = "this session", "measured", "earlier session"
FASTER, SLOWER, WITHIN_NOISE = "faster", "slower", "within noise"


@dataclass(frozen=True)
class PlainSample:
    """One plain-decode speed: a plain reply or an explicit measurement, and the conditions it ran in."""

    model_key: str
    tokens_per_s: float
    at: float  # epoch seconds
    source: str  # SESSION, MEASURED or EARLIER
    sampling: str | None = None  # None: not recorded (never counted as a mismatch)
    power_source: str | None = None  # "ac" / "battery"; None: unknown
    context_tokens: int = 0
    reply_tokens: int = 0


@dataclass(frozen=True)
class Reference:
    """The plain-decode speed a reply is compared with."""

    tokens_per_s: float
    noise: float  # relative half-width of the band around a ratio
    source: str
    at: float
    count: int  # samples averaged
    stale: str | None = None  # why it is stale, or None

    def describe(self, now: float) -> str:
        """E.g. 'plain decode 5.3 tok/s, 3 plain replies this session, 2 min ago'."""
        where = {
            SESSION: f"{self.count} plain repl{'y' if self.count == 1 else 'ies'} this session",
            MEASURED: "measured",
            EARLIER: "measured in an earlier session",
        }.get(self.source, self.source)
        return f"plain decode {self.tokens_per_s:.1f} tok/s, {where}, {age_text(now - self.at)}"


@dataclass(frozen=True)
class Comparison:
    """A speed over a reference: the ratio, its band, and whether the band clears 1.0."""

    ratio: float
    low: float
    high: float
    verdict: str  # FASTER, SLOWER or WITHIN_NOISE


def compare(tokens_per_s: float, reference: Reference) -> Comparison:
    """ratio = speed / reference, band = ratio × (1 ± noise); faster only when the whole band is above 1.0,
    slower only when it is all below; a stale reference is never a verdict."""
    ratio = tokens_per_s / reference.tokens_per_s
    low, high = ratio * (1 - reference.noise), ratio * (1 + reference.noise)
    if reference.stale is None and low > 1.0:
        verdict = FASTER
    elif reference.stale is None and high < 1.0:
        verdict = SLOWER
    else:
        verdict = WITHIN_NOISE
    return Comparison(ratio, low, high, verdict)


def age_text(seconds: float) -> str:
    """'just now', '2 min ago', '3 h ago', '2 days ago'."""
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min ago"
    if seconds < 48 * 3600:
        return f"{seconds // 3600:.0f} h ago"
    return f"{seconds // 86400:.0f} days ago"


def parse_time(iso: str) -> float:
    """Epoch seconds of an ISO time (a cache entry's measured_at); 0.0 (very old) when unreadable."""
    try:
        return datetime.fromisoformat(iso).timestamp()
    except (TypeError, ValueError):
        return 0.0


class PlainReference:
    """The session's plain-decode samples per target; answers 'the reference for this reply'."""

    def __init__(self, max_age_s: float = REFERENCE_MAX_AGE_S, clock: Callable[[], float] = time.time):
        self.max_age_s = max_age_s
        self.clock = clock
        self.samples: list[PlainSample] = []

    def add_reply(
        self,
        model_key: str,
        tokens_per_s: float,
        reply_tokens: int,
        context_tokens: int,
        sampling: str | None,
        power_source: str | None,
    ) -> PlainSample | None:
        """Keep a plain reply as a sample (None when too short or without a speed to count)."""
        if reply_tokens < MIN_REPLY_TOKENS or not tokens_per_s > 0:
            return None
        sample = PlainSample(
            model_key, float(tokens_per_s), self.clock(), SESSION, sampling, power_source, context_tokens, reply_tokens
        )
        self.samples.append(sample)
        return sample

    def add_measurement(
        self,
        model_key: str,
        tokens_per_s: float,
        source: str = MEASURED,
        at: float | None = None,
        sampling: str | None = None,
        power_source: str | None = None,
    ) -> PlainSample:
        """Keep an explicit measurement (MEASURED now, or EARLIER from the cache with its time)."""
        sample = PlainSample(
            model_key, float(tokens_per_s), self.clock() if at is None else at, source, sampling, power_source
        )
        self.samples.append(sample)
        return sample

    def reference(
        self,
        model_key: str | None,
        sampling: str | None = None,
        power_source: str | None = None,
        context_tokens: int | None = None,
        exclude: PlainSample | None = None,
    ) -> Reference | None:
        """The reference for a reply on this target with these settings (None: nothing for this target)."""
        own = [s for s in self.samples if s.model_key == model_key and s is not exclude]
        if not own:
            return None
        fresh = [s for s in own if self.stale_reason(s, sampling, power_source) is None]
        replies = [s for s in fresh if s.source == SESSION]
        if replies:
            return _from_replies(_comparable(replies, context_tokens))
        if fresh:
            best = max(reversed(fresh), key=lambda s: s.at)
            return Reference(best.tokens_per_s, DEFAULT_NOISE, best.source, best.at, 1)
        newest = max(reversed(own), key=lambda s: s.at)  # ties: the last added
        return Reference(
            newest.tokens_per_s,
            DEFAULT_NOISE,
            newest.source,
            newest.at,
            1,
            self.stale_reason(newest, sampling, power_source),
        )

    def stale_reason(self, sample: PlainSample, sampling: str | None, power_source: str | None) -> str | None:
        """Why a sample cannot stand for plain decoding now, or None."""
        if sampling and sample.sampling and sampling != sample.sampling:
            return f"measured with {sample.sampling} sampling; this reply used {sampling}"
        if power_source and sample.power_source and power_source != sample.power_source:
            return f"measured on {_power(sample.power_source)}; now on {_power(power_source)}"
        age = self.clock() - sample.at
        if age > self.max_age_s:
            return f"measured {age_text(age)} (older than {self.max_age_s / 60:.0f} min)"
        return None


def _comparable(replies: list[PlainSample], context_tokens: int | None) -> list[PlainSample]:
    """The replies whose context length is within CONTEXT_FACTOR of this one's (all of them when none is)."""
    if not context_tokens:
        return replies
    near = [
        s
        for s in replies
        if context_tokens / CONTEXT_FACTOR <= max(s.context_tokens, 1) <= context_tokens * CONTEXT_FACTOR
    ]
    return near or replies


def _from_replies(replies: list[PlainSample]) -> Reference:
    speeds = [s.tokens_per_s for s in replies]
    mean = statistics.fmean(speeds)
    noise = DEFAULT_NOISE
    if len(speeds) >= MIN_REPS_FOR_SPREAD:
        noise = max(DEFAULT_NOISE, 2 * statistics.stdev(speeds) / mean)  # about 95% of single replies
    return Reference(mean, noise, SESSION, max(s.at for s in replies), len(replies))


def _power(source: str) -> str:
    return {"ac": "mains power", "battery": "battery"}.get(source, source)
