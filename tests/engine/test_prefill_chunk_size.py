"""Prefill chunks take about a second on the machine at hand: sized from measured (tokens, seconds) chunks."""

import pytest

from specchat.engine import prefill_pace
from specchat.engine.prefill_pace import (
    PREFILL_FIRST_CHUNK,
    PREFILL_MAX_CHUNK,
    PREFILL_MIN_CHUNK,
    PrefillPace,
    prefill_chunk_size,
)


def chunks(a: float, b: float, sizes) -> list[tuple[int, float]]:
    """Chunks of a machine where one costs a + b * tokens seconds."""
    return [(n, a + b * n) for n in sizes]


def test_nothing_measured_starts_short():
    assert prefill_chunk_size([]) == PREFILL_FIRST_CHUNK
    assert prefill_chunk_size([(0, 0.3)]) == PREFILL_FIRST_CHUNK  # an empty chunk says nothing


def test_a_chunk_takes_about_a_second():
    slow = prefill_chunk_size(chunks(0.01, 1 / 300, [128, 100]))  # 300 tokens a second
    assert slow == 288  # (1 - 0.01) * 300 = 297, down to a multiple of 32
    assert 0.9 <= 0.01 + slow / 300 <= 1.0
    faster = prefill_chunk_size(chunks(0.01, 1 / 900, [288, 288, 57]))
    assert faster == 864 and faster > slow


def test_one_size_only_counts_all_of_it_per_token():
    assert prefill_chunk_size([(128, 0.5), (128, 0.5)]) == 256  # 256 tokens a second


def test_a_loaded_machine_gets_shorter_chunks_and_never_below_the_minimum():
    assert prefill_chunk_size([(128, 2.0)]) == 64
    assert prefill_chunk_size([(128, 60.0)]) == PREFILL_MIN_CHUNK


def test_a_fast_machine_is_capped():
    assert prefill_chunk_size(chunks(0.002, 1e-5, [128, 512])) == PREFILL_MAX_CHUNK


def test_per_chunk_overhead_keeps_chunks_long_enough_to_cost_at_most_five_percent():
    # 0.5 s per call: a second would hold only 100 tokens, which would make prefill 50% slower than one chunk
    a, b = 0.5, 0.005
    size = prefill_chunk_size(chunks(a, b, [128, 64]))
    assert size == 2000 - 2000 % PREFILL_MIN_CHUNK
    assert a / (b * size) <= 0.05 * 1.02  # within ~5% of one big chunk (rounding down to a multiple of 32)


def test_noisy_measurements_never_give_a_negative_or_zero_cost():
    assert prefill_chunk_size([(128, 0.2), (64, 0.3)]) == 384  # bigger chunk faster: no line, per token only
    assert prefill_chunk_size([(128, 0.0)]) == PREFILL_MAX_CHUNK  # a clock that did not move


@pytest.mark.parametrize("target_s", [0.25, 1.0, 2.0])
def test_sizes_are_multiples_of_the_minimum_within_bounds(target_s):
    for rate in (10, 100, 1000, 10_000, 100_000):
        size = prefill_chunk_size(chunks(0.003, 1 / rate, [128, 96]), target_s=target_s)
        assert PREFILL_MIN_CHUNK <= size <= PREFILL_MAX_CHUNK and size % PREFILL_MIN_CHUNK == 0


def test_the_pace_remembers_the_latest_chunks_only():
    pace = PrefillPace()
    for _ in range(20):
        pace.add(128, 4.0)  # a slow start
    for _ in range(prefill_pace.PREFILL_SAMPLES):
        pace.add(128, 0.25)
    assert pace.chunk() == 512


def test_a_sharded_process_prefills_in_fixed_chunks(monkeypatch):
    pace = PrefillPace()
    pace.add(128, 0.01)
    assert pace.chunk() == PREFILL_MAX_CHUNK
    monkeypatch.setattr(prefill_pace, "_pinned", True)
    assert pace.chunk() == prefill_pace.PREFILL_CHUNK


def test_the_runner_sizes_each_chunk_from_its_pace_and_keeps_a_set_size(dense_target):
    from specchat.engine import Engine

    engine = Engine.load(dense_target)
    engine.runner.pace.add(32, 1.0)  # 32 tokens a second, as measured (a very slow machine)
    ids = list(range(5, 100))
    sizes = []
    seen = 0
    for done, _total in engine.runner.prefill_chunks(ids):
        sizes.append(done - seen)
        seen = done
    assert seen == len(ids) and sizes[0] == PREFILL_MIN_CHUNK  # the first chunk follows the slow pace
    assert len(engine.runner.pace.samples) == 1 + len(sizes)  # every chunk measured
    engine.runner.reset()
    engine.runner.prefill_chunk = 8  # set: fixed, whatever the pace
    assert [d for d, _ in engine.runner.prefill_chunks(ids[:20])] == [8, 16, 20]
    engine.runner.prefill_chunk = None  # back to the pace
    assert engine.runner.prefill_chunk == engine.runner.pace.chunk()
