"""Caches for several sequences at once, each row with its own length.

mlx-lm's BatchKVCache keeps every row's end at one shared position (left padding), so a row
cannot give back the drafts it rejected while another keeps them. RowKVCache writes each
row at its own length and masks each row's attention to its own past: rolling a row back
is moving its length. Gated DeltaNet layers keep mlx-lm's ArraysCache, whose `lengths`
masks the padding at the end of a ragged feed (its conv window and state skip it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import mlx.core as mx

from specchat.upstream.mlx_lm import (
    ArraysCache,
    KVCache,
    arrays_cache_state,
    extend_arrays_cache,
    filter_arrays_cache,
)

from ..errors import RollbackError
from ..model_types import Cache

STEP = 256  # rows grow by this many positions at a time


class RowKVCache:
    """Keys and values (B, heads, capacity, dim) of B sequences; row b holds lengths[b] positions."""

    def __init__(self) -> None:
        self.keys: mx.array | None = None
        self.values: mx.array | None = None
        self.lengths: list[int] = []

    @property
    def offset(self) -> mx.array:
        """Each row's next position (the RoPE offset of its next token)."""
        return mx.array(self.lengths)

    def update_and_fetch(self, keys: mx.array, values: mx.array) -> tuple[mx.array, mx.array]:
        """Write a (B, heads, L, dim) feed at each row's own length; return keys and values up to the longest."""
        n = keys.shape[2]
        end = max(self.lengths) + n
        self._reserve(end, keys, values)
        assert self.keys is not None and self.values is not None
        where = (mx.array(self.lengths)[:, None] + mx.arange(n))[:, None, :, None]
        self.keys = mx.put_along_axis(self.keys, mx.broadcast_to(where, keys.shape), keys, axis=2)
        where_v = mx.broadcast_to(where, values.shape)
        self.values = mx.put_along_axis(self.values, where_v, values, axis=2)
        self.lengths = [length + n for length in self.lengths]
        return self.keys[..., :end, :], self.values[..., :end, :]

    def _reserve(self, end: int, keys: mx.array, values: mx.array) -> None:
        size = 0 if self.keys is None else self.keys.shape[2]
        if end <= size:
            return
        grow = -(-(end - size) // STEP) * STEP
        b, h, _, dk = keys.shape
        new_k = mx.zeros((b, h, grow, dk), keys.dtype)
        new_v = mx.zeros((b, h, grow, values.shape[3]), values.dtype)
        if self.keys is None or self.values is None:
            self.keys, self.values = new_k, new_v
        else:
            self.keys = mx.concatenate([self.keys, new_k], axis=2)
            self.values = mx.concatenate([self.values, new_v], axis=2)

    def make_mask(self, n: int, return_array: bool = False, window_size: int | None = None) -> mx.array:
        """(B, 1, n, S): query t of row b sees keys 0 .. lengths[b] + t (its own past and itself)."""
        if window_size is not None:
            raise RollbackError("a sliding-window attention layer cannot decode in a batch")
        end = max(self.lengths) + n
        last = mx.array(self.lengths)[:, None, None] + mx.arange(n)[None, :, None]
        return (mx.arange(end)[None, None, :] <= last)[:, None]

    def is_trimmable(self) -> bool:
        """Rows roll back by their lengths (see set_lengths), not by trim()."""
        return False

    @property
    def state(self) -> tuple[mx.array | None, mx.array | None]:
        """The arrays to evaluate after a pass."""
        return self.keys, self.values

    def append_row(self, solo: KVCache) -> None:
        """Add a sequence whose keys and values sit in a one-sequence KVCache, as the last row."""
        length = int(solo.offset) if solo.keys is not None else 0
        if length == 0:
            if self.keys is not None and self.values is not None:
                self.keys = mx.concatenate([self.keys, mx.zeros_like(self.keys[:1])])
                self.values = mx.concatenate([self.values, mx.zeros_like(self.values[:1])])
            self.lengths.append(0)
            return
        assert solo.keys is not None and solo.values is not None
        keys, values = solo.keys[..., :length, :], solo.values[..., :length, :]
        if self.keys is None or self.values is None:  # every row so far is empty
            rows = len(self.lengths)
            self.keys = mx.zeros((rows, *keys.shape[1:]), keys.dtype)
            self.values = mx.zeros((rows, *values.shape[1:]), values.dtype)
        size = max(self.keys.shape[2], -(-length // STEP) * STEP)
        self.keys, self.values = _padded(self.keys, size), _padded(self.values, size)
        self.keys = mx.concatenate([self.keys, _padded(keys, size).astype(self.keys.dtype)])
        self.values = mx.concatenate([self.values, _padded(values, size).astype(self.values.dtype)])
        self.lengths.append(length)

    def keep_rows(self, rows: Sequence[int]) -> None:
        """Keep only these rows, in this order."""
        self.lengths = [self.lengths[r] for r in rows]
        if self.keys is not None and self.values is not None:
            index = mx.array(list(rows), dtype=mx.int32)
            self.keys, self.values = self.keys[index], self.values[index]


BatchCache = RowKVCache | ArraysCache  # what row_caches makes of a model's caches


def row_caches(solo_caches: Sequence[Cache]) -> list[BatchCache]:
    """Empty batch caches shaped like one sequence's mlx-lm caches; RollbackError for a kind a batch cannot hold."""
    made: list[BatchCache] = []
    for i, cache in enumerate(solo_caches):
        if type(cache) is KVCache:
            made.append(RowKVCache())
        elif isinstance(cache, ArraysCache):
            made.append(ArraysCache(len(cache.cache)))
        else:
            raise RollbackError(f"cache {i} is a {type(cache).__name__}, which SpecChat cannot decode in a batch")
    return made


def append_row(batch: Sequence[BatchCache], solo: Sequence[Cache]) -> None:
    """Add one sequence's caches (mlx-lm, one row) to the batch caches as their last row."""
    rows = _row_count(batch)
    for mine, theirs in zip(batch, solo):
        if isinstance(mine, RowKVCache):
            mine.append_row(cast(KVCache, theirs))  # row_caches made a RowKVCache only for a KVCache
        else:
            extend_arrays_cache(mine, theirs, rows)


def _row_count(batch: Sequence[BatchCache]) -> int:
    """Rows the batch holds: its attention caches count them (an ArraysCache cannot before its first state)."""
    counts = [len(c.lengths) for c in batch if isinstance(c, RowKVCache)]
    counts += [s.shape[0] for c in batch if isinstance(c, ArraysCache) for s in arrays_cache_state(c) if s is not None]
    return max(counts, default=0)


def _padded(x: mx.array, size: int) -> mx.array:
    """x (B, heads, n, dim) with zeros after its n positions up to `size`."""
    n = x.shape[2]
    return x if n == size else mx.pad(x, [(0, 0), (0, 0), (0, size - n), (0, 0)])


def keep_rows(batch: Sequence[BatchCache], rows: Sequence[int]) -> None:
    """Keep only these rows of every batch cache, in this order."""
    for cache in batch:
        if isinstance(cache, RowKVCache):
            cache.keep_rows(rows)
        else:
            filter_arrays_cache(cache, rows)
