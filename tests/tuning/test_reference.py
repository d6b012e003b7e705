"""The plain-decode reference: session replies first, their spread as the noise band, stale with a reason."""

import pytest

from specchat.tuning.reference import (
    DEFAULT_NOISE,
    EARLIER,
    FASTER,
    SESSION,
    SLOWER,
    WITHIN_NOISE,
    PlainReference,
    Reference,
    compare,
)


def test_session_replies_beat_a_measurement_and_their_spread_is_the_noise():
    ref = PlainReference(clock=lambda: 100.0)
    ref.add_measurement("t", 9.2)
    for tps in (5.0, 5.5, 6.0):
        ref.add_reply("t", tps, reply_tokens=64, context_tokens=50, sampling="greedy", power_source="ac")
    got = ref.reference("t", "greedy", "ac", context_tokens=60)
    assert (got.tokens_per_s, got.source, got.count, got.stale) == (5.5, SESSION, 3, None)
    assert got.noise == pytest.approx(2 * 0.5 / 5.5)  # 2 x CV of 5.0, 5.5, 6.0


def test_short_replies_do_not_count_and_two_replies_use_the_default_band():
    ref = PlainReference(clock=lambda: 0.0)
    assert ref.add_reply("t", 50.0, reply_tokens=8, context_tokens=10, sampling=None, power_source=None) is None
    ref.add_reply("t", 10.0, 64, 10, None, None)
    last = ref.add_reply("t", 12.0, 64, 10, None, None)
    assert ref.reference("t").noise == DEFAULT_NOISE and ref.reference("t").tokens_per_s == 11.0
    assert ref.reference("t", exclude=last).tokens_per_s == 10.0  # a reply is not its own reference
    assert ref.reference("other") is None


def test_comparable_context_lengths_are_preferred():
    ref = PlainReference(clock=lambda: 0.0)
    ref.add_reply("t", 20.0, 64, context_tokens=100, sampling=None, power_source=None)
    ref.add_reply("t", 8.0, 64, context_tokens=4000, sampling=None, power_source=None)
    assert ref.reference("t", context_tokens=3000).tokens_per_s == 8.0
    assert ref.reference("t", context_tokens=150).tokens_per_s == 20.0


def test_an_old_cached_measurement_is_stale():
    ref = PlainReference(clock=lambda: 10_000.0)
    ref.add_measurement("t", 7.0, EARLIER, at=10_000.0 - 3 * 3600)
    got = ref.reference("t")
    assert got.stale == "measured 3 h ago (older than 30 min)"
    assert got.describe(10_000.0) == "plain decode 7.0 tok/s, measured in an earlier session, 3 h ago"


@pytest.mark.parametrize("speed,verdict", [(9.8, WITHIN_NOISE), (10.4, WITHIN_NOISE), (10.6, FASTER), (9.4, SLOWER)])
def test_the_verdict_needs_the_whole_band_past_one(speed, verdict):
    assert compare(speed, Reference(10.0, 0.05, SESSION, 0.0, 2)).verdict == verdict


def test_a_stale_reference_gives_no_verdict():
    assert compare(20.0, Reference(10.0, 0.05, SESSION, 0.0, 2, stale="old")).verdict == WITHIN_NOISE
