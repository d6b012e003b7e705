"""What the engine asks of a language model and of its caches. mlx-lm's models and caches annotate little of
this (their methods are untyped, `load` returns a bare nn.Module), so these Protocols name the parts the
engine calls; `loading.load_model` is where an mlx-lm model becomes a `LanguageModel`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import mlx.core as mx
import mlx.nn as nn


class Cache(Protocol):
    """One layer's cache (mlx-lm's KV, rotating and arrays caches, the batch's RowKVCache) as the engine
    handles it everywhere: the arrays it holds, to evaluate them, and whether it can give tokens back.
    What is particular to one kind is reached after an isinstance check, or through specchat.upstream."""

    @property
    def state(self) -> object: ...  # arrays, or a tuple or list of them (what mx.eval takes)

    def is_trimmable(self) -> bool: ...


class TrimmableCache(Cache, Protocol):
    """A cache that counts the positions it holds and gives the last n back (KV, quantized, rotating)."""

    offset: int

    def trim(self, n: int) -> int: ...


class LanguageModel(Protocol):
    """An mlx-lm model as the engine calls it: token ids (B, T) through its caches to logits (B, T, V)."""

    def __call__(self, inputs: mx.array, cache: Sequence[Cache] | None = None) -> mx.array: ...

    @property
    def layers(self) -> Sequence[nn.Module]: ...  # in cache order: layer i owns cache i

    def parameters(self) -> dict[str, object]: ...  # mlx's nested dict of arrays (tree_flatten reads it)

    def named_modules(self) -> list[tuple[str, nn.Module]]: ...

    def modules(self) -> list[nn.Module]: ...


class HiddenModel(Protocol):
    """A model that also returns its last hidden states (an mlx-optiq MTP-attached target)."""

    def __call__(
        self, inputs: mx.array, cache: Sequence[Cache] | None = None, *, return_hidden: bool
    ) -> tuple[mx.array, mx.array]: ...


class MtpModel(LanguageModel, Protocol):
    """A target with mlx-optiq's MTP head attached: the head's own cache and forward (see engine/mtp.py)."""

    @property
    def model(self) -> nn.Module: ...  # the text model: its embed_tokens embed the head's input

    def make_mtp_cache(self) -> list[TrimmableCache]: ...

    def mtp_forward(
        self,
        hidden_states: mx.array,
        next_token_ids: mx.array,
        *,
        return_hidden: bool,
        mtp_cache: Sequence[Cache] | None = None,
    ) -> tuple[mx.array, mx.array]: ...
