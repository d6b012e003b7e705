"""One batched round = one transaction over every cache of one model, kept row by row.

A RowKVCache row rolls back by its length. A Gated DeltaNet state cannot be sliced: each row
is replayed with mlx-lm's own kernel over the tokens it keeps, the others masked (the kernel
leaves the state alone at a masked position), and its conv window is cut at its own end.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import cast

import mlx.core as mx
import mlx.nn as nn

from specchat.upstream.mlx_lm import ArraysCache, gated_delta_update_of

from .. import gdn_capture
from ..errors import RollbackError
from ..gdn_capture import GdnCall
from .row_cache import BatchCache, RowKVCache


class RowTransaction:
    """Every cache's state before a round, and what each forward pass of the round fed each row."""

    def __init__(self, caches: Sequence[BatchCache]):
        self.caches = caches
        self.start = {i: list(c.lengths) for i, c in enumerate(caches) if isinstance(c, RowKVCache)}
        self.arrays = {i: (c[0], c[1]) for i, c in enumerate(caches) if isinstance(c, ArraysCache)}
        self.recorder = gdn_capture.Recorder()
        self.fed: list[list[int]] = []  # per forward pass: the real tokens it fed each row

    @contextmanager
    def feeding(self, real: list[int]) -> Iterator[None]:
        """Wrap one forward pass that fed real[b] tokens to row b (the rest of its feed was padding)."""
        with gdn_capture.recording(self.recorder):
            yield
        self.fed.append(list(real))

    def commit(self, keep: Sequence[int], layers: Mapping[int, nn.Module]) -> None:
        """Row b keeps the first keep[b] real tokens it was fed this round; the rest is rolled back."""
        fed = [sum(f[b] for f in self.fed) for b in range(len(keep))]
        for b, (k, n) in enumerate(zip(keep, fed)):
            if not 0 <= k <= n:
                raise RollbackError(f"row {b}: cannot keep {k} of {n} tokens fed this round")
        for i, cache in enumerate(self.caches):
            if isinstance(cache, RowKVCache):
                cache.lengths = [s + k for s, k in zip(self.start[i], keep)]
        linear = sorted(self.arrays)
        if linear and keep != fed:
            calls = self.recorder.calls
            if len(calls) != len(linear) * len(self.fed):
                raise RollbackError(f"recorded {len(calls)} linear-attention calls for {len(linear)} layers")
            for j, i in enumerate(linear):
                mine = calls[j :: len(linear)]
                arrays = cast(ArraysCache, self.caches[i])  # self.arrays holds the ArraysCaches' indices only
                _commit_arrays(arrays, self.arrays[i], mine, self.fed, keep, layers[i])


def _commit_arrays(
    cache: ArraysCache,
    before: tuple[mx.array | None, mx.array | None],
    calls: list[GdnCall],
    fed: list[list[int]],
    keep: Sequence[int],
    layer: nn.Module,
) -> None:
    """Give each row the conv window and recurrent state after its own kept tokens."""
    conv, state = cache[0], cache[1]
    ends = [_end_of(fed, b, k) for b, k in enumerate(keep)]
    for j, call in enumerate(calls):
        within = [r if c == j else call.length for c, r in ends]
        if all(c != j for c, _ in ends) or ends_at_last(ends, fed, j):
            continue
        rows = mx.array([c == j for c, _ in ends])
        new_conv, new_state = _replayed(call, within, layer)
        conv = mx.where(rows[:, None, None], new_conv, conv)
        state = mx.where(rows.reshape(-1, *([1] * (state.ndim - 1))), new_state, state)
    untouched = mx.array([c < 0 for c, _ in ends])
    if before[0] is not None and before[1] is not None:
        conv = mx.where(untouched[:, None, None], before[0], conv)
        state = mx.where(untouched.reshape(-1, *([1] * (state.ndim - 1))), before[1], state)
    elif any(c < 0 for c, _ in ends):
        conv = mx.where(untouched[:, None, None], mx.zeros_like(conv), conv)
        state = mx.where(untouched.reshape(-1, *([1] * (state.ndim - 1))), mx.zeros_like(state), state)
    cache[0], cache[1] = conv, state


def ends_at_last(ends: list[tuple[int, int]], fed: list[list[int]], j: int) -> bool:
    """True when every row ending in pass j keeps all of it and j is the last pass: the cache already holds that."""
    if j != len(fed) - 1:
        return False
    return all(c != j or r == fed[j][b] for b, (c, r) in enumerate(ends))


def _end_of(fed: list[list[int]], row: int, keep: int) -> tuple[int, int]:
    """(pass, tokens into it) where a row's kept tokens end; (-1, 0) when it keeps nothing."""
    for j, f in enumerate(fed):
        if keep <= f[row]:
            return (j, keep) if keep else ((j - 1, fed[j - 1][row]) if j else (-1, 0))
        keep -= f[row]
    return len(fed) - 1, fed[-1][row]


def _replayed(call: GdnCall, within: list[int], layer: nn.Module) -> tuple[mx.array, mx.array]:
    """The conv window and state after within[b] tokens of this call, row by row."""
    if call.conv_input is None:
        raise RollbackError("a linear-attention layer ran without its conv1d first: its conv state cannot roll back")
    original = gated_delta_update_of(layer)
    if original is None:
        raise RollbackError(f"{type(layer).__module__} has no gated_delta_update to replay a rollback with")
    q, k, v, a, b, a_log, dt_bias, mask = call.args
    upto = mx.array(within)
    keep = mx.arange(call.length)[None, :] < upto[:, None]
    mask = keep if mask is None else (mask & keep)
    _, state = original(q, k, v, a, b, a_log, dt_bias, call.state_in, mask, **call.kwargs)
    window = call.conv_input.shape[1] - call.length
    where = (upto[:, None] + mx.arange(window))[..., None]
    return mx.take_along_axis(call.conv_input, where, axis=1), state
