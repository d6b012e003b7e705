"""The caches of recently finished batch rows, so a follow-up request reads only what is new.

A conversation's next request repeats the last one's prompt and reply: the row that ended keeps its
caches here (one sequence each, copied out of the batch) and a newcomer that begins with those
tokens starts from them. KV caches are cut to any common prefix; a Gated DeltaNet state only
serves a prompt that begins with every token it took in (it cannot be cut).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import mlx.core as mx

from specchat.upstream.mlx_lm import ArraysCache, KVCache

from ..model_types import Cache
from ..runner import common_prefix_len
from .row_cache import BatchCache, RowKVCache

SIZE = 4  # finished rows kept, the most recent first


@dataclass
class Stored:
    """One finished sequence's tokens and its one-row caches, per model."""

    tokens: list[int]
    caches: list[Cache]  # extract_row's: a KVCache or an ArraysCache per layer


def extract_row(batch: Sequence[BatchCache], row: int) -> list[Cache]:
    """One row of the batch caches as one-sequence mlx-lm caches (copies: the batch may change)."""
    out: list[Cache] = []
    for cache in batch:
        if isinstance(cache, RowKVCache):
            solo = KVCache()
            n = cache.lengths[row]
            if n and cache.keys is not None and cache.values is not None:
                solo.keys = mx.contiguous(cache.keys[row : row + 1, :, :n, :])
                solo.values = mx.contiguous(cache.values[row : row + 1, :, :n, :])
                solo.offset = n
            out.append(solo)
        else:
            states = ArraysCache(len(cache.cache))
            rows: list[mx.array | None] = [None if c is None else mx.contiguous(c[row : row + 1]) for c in cache.cache]
            states.cache = rows  # type: ignore[assignment]  # mlx-lm infers list[None]
            out.append(states)
    return out


def _cut(caches: list[Cache], n: int) -> list[Cache]:
    """Caches holding only the first n tokens, new objects (the stored ones stay as they are); a recurrent
    state is copied whole (start() only cuts where it holds exactly those n)."""
    out: list[Cache] = []
    for cache in caches:
        if isinstance(cache, ArraysCache):
            copy = ArraysCache(len(cache.cache))
            copy.cache = list(cache.cache)
            out.append(copy)
            continue
        kv, solo = cast(KVCache, cache), KVCache()  # extract_row stores a KVCache or an ArraysCache
        if n and kv.keys is not None and kv.values is not None:
            solo.keys, solo.values, solo.offset = kv.keys[..., :n, :], kv.values[..., :n, :], n
        out.append(solo)
    return out


class PrefixStore:
    """The last few finished rows' caches for one model."""

    def __init__(self, size: int = SIZE):
        self.size = size
        self.entries: list[Stored] = []

    def put(self, tokens: list[int], caches: list[Cache]) -> None:
        """Keep a finished sequence's caches (holding exactly `tokens`)."""
        self.entries = [Stored(list(tokens), caches), *self.entries][: self.size]

    def start(self, tokens: list[int]) -> tuple[int, list[Cache] | None]:
        """The most of `tokens` a stored sequence already holds, and caches holding just those (new objects)."""
        best, found = 0, None
        for entry in self.entries:
            n = common_prefix_len(entry.tokens, tokens)
            recurrent = any(isinstance(c, ArraysCache) for c in entry.caches)
            if recurrent and n < len(entry.tokens):
                continue  # a recurrent state cannot give back tokens
            if n > best:
                best, found = n, entry
        return (best, _cut(found.caches, best)) if found is not None else (0, None)

    def clear(self) -> None:
        """Forget every stored sequence."""
        self.entries = []
