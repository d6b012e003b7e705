"""Ring buffers and the dashboard's rolling / cumulative figures, on numbers worked out by hand."""

import math

import numpy as np
import pytest

from specchat.engine.events import RoundResult
from specchat.system.ringbuffer import (
    RingBuffer,
    RoundSeries,
    cumulative_ratio,
    rolling_rate,
    safe_ratio,
)


def test_ring_buffer_keeps_the_latest_rows_in_order():
    buffer = RingBuffer(3, width=2)
    assert len(buffer) == 0 and buffer.last() is None and buffer.array().shape == (0, 2)
    assert buffer.append(1, 10) is None
    buffer.append(2, 20)
    buffer.append(3, None)
    dropped = buffer.append(4, 40)
    assert dropped.tolist() == [1.0, 10.0]
    assert buffer.column(0).tolist() == [2.0, 3.0, 4.0]
    assert math.isnan(buffer.column(1)[1]) and buffer.last() == (4.0, 40.0)
    buffer.append(5, 50)
    buffer.append(6, 60)
    buffer.append(7, 70)  # wrapped around twice
    assert buffer.column(0).tolist() == [5.0, 6.0, 7.0] and len(buffer) == 3
    buffer.clear()
    assert len(buffer) == 0 and buffer.last() is None


def test_ring_buffer_rejects_bad_shapes():
    with pytest.raises(ValueError, match="capacity"):
        RingBuffer(0)
    with pytest.raises(ValueError, match="rows of 2 values"):
        RingBuffer(4, width=2).append(1.0)


def test_array_is_a_copy():
    buffer = RingBuffer(2)
    buffer.append(1.0)
    buffer.array()[0, 0] = 99.0
    assert buffer.column().tolist() == [1.0]


def test_safe_ratio_marks_empty_denominators():
    out = safe_ratio([1, 2, 3], [2, 0, -1])
    assert out[0] == 0.5 and math.isnan(out[1]) and math.isnan(out[2])


def test_rolling_rate_weights_by_time():
    # tokens 3, 1, 4 over seconds 1, 1, 2: the window of 2 at the end is (1 + 4) / (1 + 2)
    assert rolling_rate([3, 1, 4], [1, 1, 2], 2).tolist() == pytest.approx([3.0, 2.0, 5 / 3])


def test_cumulative_ratio_with_offsets():
    assert cumulative_ratio([1, 2, 0], [2, 2, 4]).tolist() == pytest.approx([0.5, 0.75, 3 / 8])
    assert cumulative_ratio([1], [1], offset_num=3, offset_den=7).tolist() == pytest.approx([0.5])


def rounds(*triples, seconds=0.5):
    """RoundResults from (drafted, accepted, emitted) triples."""
    return [RoundResult(i, 4, d, a, e, seconds * 0.25, seconds * 0.75) for i, (d, a, e) in enumerate(triples)]


def test_round_series_figures():
    series = RoundSeries(window=2)
    for r in rounds((4, 4, 5), (4, 1, 2), (4, 0, 1), (4, 3, 4)):
        series.add(r)
    assert series.indices().tolist() == [0, 1, 2, 3]
    assert series.tokens_per_s().tolist() == pytest.approx([10.0, 4.0, 2.0, 8.0])
    assert series.rolling_tokens_per_s().tolist() == pytest.approx([10.0, 7.0, 3.0, 5.0])
    assert series.acceptance().tolist() == pytest.approx([1.0, 0.25, 0.0, 0.75])
    assert series.cumulative_acceptance().tolist() == pytest.approx([1.0, 5 / 8, 5 / 12, 8 / 16])
    assert series.mean_accepted_per_round().tolist() == pytest.approx([4.0, 2.5, 5 / 3, 2.0])
    assert series.totals() == pytest.approx({"rounds": 4, "drafted": 16, "accepted": 8, "emitted": 12, "seconds": 2.0})


def test_round_series_cumulative_figures_survive_wraparound():
    triples = [(4, i % 5, i % 5 + 1) for i in range(10)]
    series = RoundSeries(capacity=3)
    for r in rounds(*triples):
        series.add(r)
    accepted = [t[1] for t in triples]
    assert len(series) == 3 and series.indices().tolist() == [7, 8, 9]
    assert series.cumulative_acceptance()[-1] == pytest.approx(sum(accepted) / 40)
    assert series.mean_accepted_per_round()[-1] == pytest.approx(sum(accepted) / 10)
    assert series.cumulative_acceptance()[0] == pytest.approx(sum(accepted[:8]) / 32)
    assert series.totals()["rounds"] == 10 and series.totals()["accepted"] == sum(accepted)


def test_round_series_empty_and_cleared():
    series = RoundSeries()
    assert series.tokens_per_s().size == 0 and series.cumulative_acceptance().size == 0
    series.add(rounds((2, 2, 3))[0])
    series.clear()
    assert len(series) == 0 and series.totals()["rounds"] == 0


def test_zero_time_round_is_not_infinite():
    series = RoundSeries()
    series.add(RoundResult(0, 2, 2, 1, 2, 0.0, 0.0))
    assert np.isnan(series.tokens_per_s()[0])
