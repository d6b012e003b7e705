"""Batch caches row by row: Gated DeltaNet states join and leave through mlx-lm's ArraysCache.extend / filter."""

import mlx.core as mx

from specchat.engine.batch.row_cache import RowKVCache, append_row, keep_rows, row_caches
from specchat.upstream.mlx_lm import ArraysCache, KVCache


def solo(conv: float | None, length: int = 0) -> list:
    """One sequence's caches: a KV cache holding `length` positions, a Gated DeltaNet cache (conv, state)."""
    kv = KVCache()
    if length:
        kv.update_and_fetch(mx.full((1, 2, length, 4), conv or 0.0), mx.full((1, 2, length, 4), conv or 0.0))
    arrays = ArraysCache(2)
    if conv is not None:
        arrays[0] = mx.full((1, 3, 5), conv)
        arrays[1] = mx.full((1, 2, 4, 4), conv + 0.5)
    return [kv, arrays]


def rows_of(batch: list) -> list[float | None]:
    """Each row's conv value (None while no row has a state)."""
    conv = batch[1].cache[0]
    return [None] * len(batch[0].lengths) if conv is None else [float(conv[b, 0, 0]) for b in range(conv.shape[0])]


def test_rows_join_and_leave_with_their_own_states():
    batch = row_caches(solo(None))
    assert isinstance(batch[0], RowKVCache) and type(batch[1]) is ArraysCache
    append_row(batch, solo(1.0, 3))
    assert rows_of(batch) == [1.0] and batch[1].cache[1].shape == (1, 2, 4, 4)
    append_row(batch, solo(None))  # nothing fed yet: zeros, as mlx-lm starts a state
    append_row(batch, solo(3.0, 2))
    assert rows_of(batch) == [1.0, 0.0, 3.0] and batch[0].lengths == [3, 0, 2]
    assert mx.array_equal(batch[1].cache[1][2], mx.full((2, 4, 4), 3.5)).item()
    keep_rows(batch, [2, 0])
    assert rows_of(batch) == [3.0, 1.0] and batch[0].lengths == [2, 3]
    keep_rows(batch, [])
    assert rows_of(batch) == [] and batch[1].cache[0].shape == (0, 3, 5)


def test_a_fed_row_after_unfed_ones_gets_zeros_for_each_of_them():
    batch = row_caches(solo(None))
    append_row(batch, solo(None))
    append_row(batch, solo(None))
    assert batch[1].cache == [None, None] and batch[0].lengths == [0, 0]
    append_row(batch, solo(2.0, 1))
    assert rows_of(batch) == [0.0, 0.0, 2.0]
    assert batch[1].cache[1].shape == (3, 2, 4, 4)
