"""mlx-lm: loading, caches and sampling filters, and the internals exact rollback relies on.

Internals used (each verified by `self_check`):
- Gated DeltaNet: layers found by their `conv1d`, `A_log`, `dt_bias`; the module-level
  `gated_delta_update(q, k, v, a, b, A_log, dt_bias, state, mask, ...)` each layer's module
  calls is wrapped (to record its inputs) and replayed over a prefix of a round;
- RotatingKVCache's `_idx`, `keep`, `max_size` (snapshot and restore after wrap-around);
- ArraysCache's `cache` list (the conv and recurrent states), its `extend` and `filter` (batch rows);
- `utils._get_classes` (does mlx-lm have a model class for a config).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

import mlx.core as mx
from mlx_lm.models.cache import (
    ArraysCache,
    ConcatenateKVCache,
    KVCache,
    QuantizedKVCache,
    RotatingKVCache,
    make_prompt_cache,
)
from mlx_lm.sample_utils import apply_min_p, apply_top_k, apply_top_p
from mlx_lm.utils import load, load_tokenizer

from .checks import (
    HookProbe,
    SelfCheck,
    installed_version,
    mismatch_reason,
    missing_attributes,
    missing_parameters,
    run_checks,
)

__all__ = [
    "ArraysCache",
    "ConcatenateKVCache",
    "KVCache",
    "QuantizedKVCache",
    "RotatingKVCache",
    "apply_min_p",
    "apply_top_k",
    "apply_top_p",
    "load",
    "load_with_config",
    "load_tokenizer",
    "make_prompt_cache",
    "arrays_cache_state",
    "set_arrays_cache_state",
    "extend_arrays_cache",
    "filter_arrays_cache",
    "rotating_cache_state",
    "set_rotating_cache_state",
    "gated_delta_layers",
    "is_gated_delta_layer",
    "gated_delta_update_of",
    "wrap_gated_delta_update",
    "RecordingRotatingKVCache",
    "record_rotating_inserts",
    "stop_recording_inserts",
    "insert_unrecorded",
    "swap_conv_class",
    "model_classes",
    "self_check",
    "model_check",
]

UPSTREAM, DISTRIBUTION = "mlx-lm", "mlx-lm"
GDN_PARAMETERS = ("q", "k", "v", "a", "b", "A_log", "dt_bias", "state", "mask")
GDN_LAYER_ATTRIBUTES = ("conv1d", "A_log", "dt_bias")
ROTATING_ATTRIBUTES = ("keys", "values", "offset", "keep", "max_size", "_idx")
WRAPPED_MARK = "specchat_original"

# mlx-lm's models, layers and caches are untyped where SpecChat reaches into them (ArraysCache.cache even
# infers as list[None]), so they are Any here. What is taken from them is typed: an ArraysCache's states
# (conv window, recurrent state); a RotatingKVCache's keys, values, offset, keep, max_size and write index,
# and the (keys, values) it took in while recording; the kernel gated_delta_update(q, k, v, a, b, A_log,
# dt_bias, state, mask, **kwargs) -> (out, new state).
ArraysState = list[mx.array | None]
RotatingState = tuple[mx.array | None, mx.array | None, int, int, int, int]
Inserted = list[tuple[mx.array, mx.array]]
GatedDeltaUpdate = Callable[..., tuple[mx.array, mx.array]]


# --- loading --------------------------------------------------------------------------------


def load_with_config(path: str, lazy: bool = False) -> tuple[Any, Any, dict[str, Any]]:
    """mlx-lm's load() of a local folder with remote code refused: (model, tokenizer, config)."""
    loaded = load(path, lazy=lazy, return_config=True, trust_remote_code=False)
    # mlx-lm annotates load() as its 2- or its 3-tuple; return_config=True gives the 3-tuple. The model
    # and tokenizer are Any: mlx-lm's annotations (nn.Module, TokenizerWrapper) name none of what we call.
    model, tokenizer, config = cast(tuple[Any, Any, dict[str, Any]], loaded)
    return model, tokenizer, config


# --- caches ---------------------------------------------------------------------------------


def arrays_cache_state(cache: Any) -> ArraysState:
    """The states an ArraysCache holds (conv window, recurrent state), as a new list."""
    return list(cache.cache)


def set_arrays_cache_state(cache: Any, states: Iterable[mx.array | None]) -> None:
    """Put states taken by arrays_cache_state back into an ArraysCache."""
    cache.cache = list(states)


def extend_arrays_cache(cache: Any, other: Any, rows: int) -> None:
    """mlx-lm's ArraysCache.extend: other's rows after the `rows` the cache holds; a state not fed yet is zeros."""
    for j, (held, state) in enumerate(zip(cache.cache, other.cache)):
        if held is None and state is not None:  # extend would count a cache with no state as one row
            cache.cache[j] = mx.zeros((rows, *state.shape[1:]), state.dtype)
    cache.extend(other)


def filter_arrays_cache(cache: Any, rows: Sequence[int]) -> None:
    """mlx-lm's ArraysCache.filter: keep only these rows, in this order."""
    cache.filter(mx.array(list(rows), dtype=mx.int32))


def rotating_cache_state(cache: Any) -> RotatingState:
    """Everything that places a RotatingKVCache's entries: keys, values, offset, keep, max_size, write index."""
    keys = None if cache.keys is None else cache.keys[...]
    values = None if cache.values is None else cache.values[...]
    return (keys, values, cache.offset, cache.keep, cache.max_size, cache._idx)


def set_rotating_cache_state(cache: Any, state: RotatingState) -> None:
    """Restore a state taken by rotating_cache_state."""
    cache.keys, cache.values, cache.offset, cache.keep, cache.max_size, cache._idx = state


# --- Gated DeltaNet -------------------------------------------------------------------------


def is_gated_delta_layer(module: object) -> bool:
    """True for an mlx-lm Gated DeltaNet layer (conv1d + A_log + dt_bias)."""
    return all(hasattr(module, name) for name in GDN_LAYER_ATTRIBUTES)


def gated_delta_layers(model: Any) -> dict[int, Any]:
    """Map cache index -> Gated DeltaNet module, following model.layers order."""
    found: dict[int, Any] = {}
    for i, layer in enumerate(model.layers):
        for _, m in layer.named_modules():
            if is_gated_delta_layer(m):
                found[i] = m
    return found


def _layer_module(layer: object) -> Any:  # the layer's module: its functions are read and replaced by name
    return sys.modules[type(layer).__module__]


def gated_delta_update_of(layer: object) -> GatedDeltaUpdate | None:
    """mlx-lm's own gated_delta_update that this layer's module calls (unwrapped); None when it has none."""
    fn = getattr(_layer_module(layer), "gated_delta_update", None)
    return getattr(fn, WRAPPED_MARK, fn)


def wrap_gated_delta_update(layer: object, make_wrapper: Callable[[GatedDeltaUpdate], GatedDeltaUpdate]) -> bool:
    """Replace the gated_delta_update the layer's module calls by make_wrapper(original), once per module.
    Leaves the module alone and returns False when that function does not fit (see self_check)."""
    module = _layer_module(layer)
    fn = getattr(module, "gated_delta_update", None)
    if hasattr(fn, WRAPPED_MARK):
        return True
    if fn is None or _gdn_update_problem(fn) is not None:
        return False
    wrapper = make_wrapper(fn)
    setattr(wrapper, WRAPPED_MARK, fn)
    module.gated_delta_update = wrapper
    return True


class RecordingRotatingKVCache(RotatingKVCache):
    """A RotatingKVCache that remembers the keys/values inserted while `inserted` is a list (one round)."""

    inserted: Inserted | None = None

    def update_and_fetch(self, keys: mx.array, values: mx.array) -> tuple[mx.array, mx.array]:
        """Remember keys and values while recording, then insert them as mlx-lm does."""
        if self.inserted is not None:
            self.inserted.append((keys, values))
        return super().update_and_fetch(keys, values)


def record_rotating_inserts(cache: Any) -> None:
    """Make a RotatingKVCache remember what is inserted from now on (its class becomes the recording one)."""
    if type(cache) is RotatingKVCache:
        cache.__class__ = RecordingRotatingKVCache
    cache.inserted = []


def stop_recording_inserts(cache: Any) -> Inserted:
    """The (keys, values) inserted since record_rotating_inserts, in order; recording stops."""
    inserted: Inserted = getattr(cache, "inserted", None) or []
    cache.inserted = None
    return inserted


def insert_unrecorded(cache: Any, keys: mx.array, values: mx.array) -> None:
    """Insert keys/values into a RotatingKVCache the way mlx-lm does, without recording them."""
    RotatingKVCache.update_and_fetch(cache, keys, values)


def swap_conv_class(layer: Any, subclass_for: Callable[[type], type]) -> None:
    """Give the layer's conv1d the class subclass_for(its class) returns (records the conv input)."""
    conv = layer.conv1d
    new = subclass_for(type(conv))
    if type(conv) is not new:
        conv.__class__ = new


def model_classes(config: dict[str, Any]) -> tuple[Any, Any]:
    """mlx-lm's (Model, ModelArgs) classes for a config; ValueError / KeyError when it has none,
    ValueError naming the change when the installed mlx-lm no longer has `utils._get_classes`."""
    problem = _probe_get_classes()
    if problem:
        raise ValueError(mismatch_reason(UPSTREAM, installed_version(DISTRIBUTION), "utils._get_classes", problem))
    from mlx_lm.utils import _get_classes

    return _get_classes(config)


# --- self-check -----------------------------------------------------------------------------


def _gdn_update_problem(fn: object) -> str | None:
    return missing_parameters(fn, GDN_PARAMETERS, positional=True)


def _probe_gdn_update() -> str | None:
    try:
        module = importlib.import_module("mlx_lm.models.gated_delta")
    except ImportError:
        return "mlx_lm.models.gated_delta is gone"
    return _gdn_update_problem(getattr(module, "gated_delta_update", None))


def _probe_model_gdn(model: Any, linear_caches: int) -> HookProbe:
    def probe() -> str | None:
        layers = gated_delta_layers(model)
        if len(layers) != linear_caches:
            return (
                f"{len(layers)} layers have {', '.join(GDN_LAYER_ATTRIBUTES)} but the model has "
                f"{linear_caches} linear-attention caches"
            )
        for layer in layers.values():
            problem = _gdn_update_problem(gated_delta_update_of(layer))
            if problem:
                return f"{problem} (as called by {type(layer).__module__})"
        return None

    return probe


def _probe_rotating() -> str | None:
    cache = RotatingKVCache(max_size=4, keep=1)
    return (
        missing_attributes(cache, ROTATING_ATTRIBUTES)
        or missing_parameters(cache.update_and_fetch, ("keys", "values"))
        or missing_attributes(cache, ("trim",))
    )


def _probe_arrays() -> str | None:
    cache = ArraysCache(2)
    if not isinstance(getattr(cache, "cache", None), list):
        return "it no longer keeps its states in a `cache` list"
    cache[1] = mx.zeros((1,))
    if cache.cache[1] is None:
        return "indexing it no longer sets `cache`"
    return missing_parameters(cache.extend, ("other",)) or missing_parameters(cache.filter, ("batch_indices",))


def _probe_get_classes() -> str | None:
    from mlx_lm import utils

    return missing_parameters(getattr(utils, "_get_classes", None), ("config",))


def _global_probes() -> dict[str, HookProbe]:
    return {
        "load": lambda: missing_parameters(load, ("path_or_hf_repo", "return_config", "trust_remote_code")),
        "load_tokenizer": lambda: missing_parameters(load_tokenizer, ("model_path", "tokenizer_config_extra")),
        "make_prompt_cache": lambda: missing_parameters(make_prompt_cache, ("model", "max_kv_size")),
        "utils._get_classes": _probe_get_classes,
        "gated_delta_update": _probe_gdn_update,
        "RotatingKVCache": _probe_rotating,
        "ArraysCache": _probe_arrays,
    }


def self_check() -> SelfCheck:
    """Verify every mlx-lm hook SpecChat uses against the installed mlx-lm."""
    return run_checks(UPSTREAM, DISTRIBUTION, _global_probes())


def model_check(model: Any, caches: Sequence[Any]) -> SelfCheck:
    """Verify only the hooks rolling back this model's caches needs (none for plain KV caches)."""
    probes: dict[str, HookProbe] = {}
    linear = sum(isinstance(c, ArraysCache) for c in caches)
    if linear:
        probes["gated_delta_update"] = _probe_model_gdn(model, linear)
        probes["ArraysCache"] = _probe_arrays
    if any(isinstance(c, RotatingKVCache) for c in caches):
        probes["RotatingKVCache"] = _probe_rotating
    return run_checks(UPSTREAM, DISTRIBUTION, probes)


def shard_keeping_head(model: Any, group: mx.distributed.Group) -> None:
    """model.shard(group), but an untied lm_head stays whole on every rank.

    qwen3_5's shard() splits an untied lm_head by vocabulary and gathers the logits in its __call__;
    the MTP head calls lm_head directly and would see a slice. A whole head costs vocab x hidden per
    rank and keeps every caller exact. (mlx-lm internals: language_model, lm_head, sharding_group.)
    """
    text = getattr(model, "language_model", model)
    head = getattr(text, "lm_head", None)
    model.shard(group)
    if head is not None and getattr(text, "lm_head", None) is not head:
        text.lm_head = head
        text.sharding_group = None
