"""One speculative round = one transaction over every cache of one model.

MLX arrays are immutable values, so the pre-round state is kept by reference. At
commit only the first `keep` tokens fed during the round survive:
- KVCache / QuantizedKVCache: trim the rest;
- RotatingKVCache: trim while nothing was overwritten, else restore and re-insert
  the kept keys/values;
- ArraysCache (Gated DeltaNet): full keep needs nothing, zero keep restores, a
  partial keep replays mlx-lm's recurrence over the kept tokens only.
Everything recorded is dropped when the round ends.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import mlx.nn as nn

from specchat.upstream.mlx_lm import (
    ArraysCache,
    ArraysState,
    ConcatenateKVCache,
    KVCache,
    QuantizedKVCache,
    RotatingKVCache,
    RotatingState,
    arrays_cache_state,
    gated_delta_layers,
    gated_delta_update_of,
    insert_unrecorded,
    record_rotating_inserts,
    rotating_cache_state,
    set_arrays_cache_state,
    set_rotating_cache_state,
    stop_recording_inserts,
)

from . import gdn_capture
from .errors import RollbackError
from .gdn_capture import GdnCall
from .model_types import Cache, LanguageModel

TRIMMABLE = (KVCache, QuantizedKVCache, ConcatenateKVCache)


def check_supported(caches: Sequence[Cache]) -> None:
    """Raise RollbackError naming the first cache type that cannot be rolled back."""
    for i, c in enumerate(caches):
        if not isinstance(c, (*TRIMMABLE, RotatingKVCache, ArraysCache)):
            raise RollbackError(
                f"cache {i} is a {type(c).__name__}, which SpecChat cannot roll back "
                "exactly; speculative decoding is not available for this model"
            )


class Transaction:
    """The state of every cache of one model before a round, and the round's records."""

    def __init__(self, caches: Sequence[Cache]):
        check_supported(caches)
        self.caches = caches
        # What a rollback restores, by cache index (a trimmable cache needs nothing: trim() moves its offset back).
        self.rotating: dict[int, RotatingState] = {}
        self.arrays: dict[int, ArraysState] = {}
        self._snapshot()
        self.recorder = gdn_capture.Recorder()
        self.fed = 0

    def _snapshot(self) -> None:
        for i, cache in enumerate(self.caches):
            if isinstance(cache, TRIMMABLE):
                continue
            if isinstance(cache, RotatingKVCache):
                record_rotating_inserts(cache)
                self.rotating[i] = rotating_cache_state(cache)
            elif isinstance(cache, ArraysCache):
                self.arrays[i] = arrays_cache_state(cache)

    @contextmanager
    def feeding(self, num_tokens: int) -> Iterator[None]:
        """Wrap one forward pass of num_tokens tokens made during this round."""
        with gdn_capture.recording(self.recorder):
            yield
        self.fed += num_tokens

    def commit(self, keep: int, layers: Mapping[int, nn.Module]) -> None:
        """Keep the first `keep` tokens fed in this round; roll back the rest.

        `layers` maps each linear-attention cache index to its layer (see linear_layers)."""
        if not 0 <= keep <= self.fed:
            raise RollbackError(f"cannot keep {keep} of {self.fed} tokens fed this round")
        linear = [i for i, c in enumerate(self.caches) if isinstance(c, ArraysCache)]
        calls = _calls_per_cache(self.recorder.calls, linear, self.arrays)
        for i, cache in enumerate(self.caches):
            if isinstance(cache, TRIMMABLE):
                cache.trim(self.fed - keep)
            elif isinstance(cache, RotatingKVCache):
                _commit_rotating(cache, self.rotating[i], keep, self.fed)
            elif isinstance(cache, ArraysCache):  # check_supported admits no other kind
                _commit_arrays(cache, self.arrays[i], calls.get(i, []), keep, self.fed, layers.get(i))
        self.rotating, self.arrays, self.recorder = {}, {}, gdn_capture.Recorder()


def _calls_per_cache(
    calls: list[GdnCall], linear: list[int], snapshots: Mapping[int, ArraysState]
) -> dict[int, list[GdnCall]]:
    """Give each ArraysCache its calls: a forward pass calls the linear layers in order."""
    if not linear:
        return {}
    if len(calls) % len(linear):
        raise RollbackError(
            f"recorded {len(calls)} linear-attention calls for {len(linear)} layers; "
            "a forward pass ran outside the round's recording"
        )
    per_cache = {i: calls[j :: len(linear)] for j, i in enumerate(linear)}
    for i, chain in per_cache.items():
        state = snapshots[i][1]
        for call in chain:
            if state is not None and call.state_in is not state:
                raise RollbackError(f"linear-attention cache {i}: recorded calls do not chain")
            state = call.state_out
    return per_cache


def linear_layers(model: LanguageModel) -> dict[int, nn.Module]:
    """Map cache index -> Gated DeltaNet module, following model.layers order."""
    return gated_delta_layers(model)


def _commit_arrays(
    cache: ArraysCache, snapshot: ArraysState, calls: list[GdnCall], keep: int, fed: int, layer: nn.Module | None
) -> None:
    # Full keep and zero keep need no record of the calls: plain decoding works unhooked.
    if keep == fed:
        return
    if keep == 0:
        set_arrays_cache_state(cache, snapshot)
        return
    for call in calls:
        if keep <= call.length:
            original = gated_delta_update_of(layer)
            if original is None:
                raise RollbackError(f"{type(layer).__module__} has no gated_delta_update to replay a rollback with")
            cache[0] = call.conv_state_after(keep)
            cache[1] = call.state_after(keep, original)
            return
        keep -= call.length
    if not calls:
        raise RollbackError(
            "no linear-attention calls were recorded this round: mlx-lm's "
            "gated_delta_update is not hooked (see specchat.upstream.mlx_lm.model_check)"
        )
    raise RollbackError("rollback point lies past the recorded linear-attention calls")


def _commit_rotating(cache: RotatingKVCache, snapshot: RotatingState, keep: int, fed: int) -> None:
    inserted = stop_recording_inserts(cache)
    if keep == fed:
        return
    if cache.offset <= cache.max_size:
        cache.trim(fed - keep)
        return
    set_rotating_cache_state(cache, snapshot)
    for keys, values in inserted:
        n = min(keep, keys.shape[2])
        if n == 0:
            break
        insert_unrecorded(cache, keys[..., :n, :], values[..., :n, :])
        keep -= n
