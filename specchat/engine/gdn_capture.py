"""Record the inputs of every Gated DeltaNet call during a speculative round.

mlx-lm's linear-attention layers keep a recurrent state that cannot be sliced. To
keep only the first r tokens of a round we keep, per call, the conv input and the
arguments of mlx-lm's own `gated_delta_update`, and replay it over r tokens. The
hooks pass straight through when no recorder is active on the calling thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import mlx.core as mx

from specchat.upstream.mlx_lm import (
    GatedDeltaUpdate,
    is_gated_delta_layer,
    swap_conv_class,
    wrap_gated_delta_update,
)

from .errors import RollbackError
from .model_types import LanguageModel

# gated_delta_update's arguments but the state: q, k, v, a, b, A_log, dt_bias, mask
GdnArgs = tuple[mx.array, mx.array, mx.array, mx.array, mx.array, mx.array, mx.array, mx.array | None]
_local = threading.local()
_recording_classes: dict[type, type] = {}


@dataclass
class GdnCall:
    """One call of one linear-attention layer: its conv input and recurrence arguments."""

    conv_input: mx.array | None  # None when the layer did not call its conv1d first (an mlx-lm change)
    args: GdnArgs
    kwargs: dict[str, object]  # the kernel's keyword arguments, passed back unchanged on replay
    state_in: mx.array | None
    state_out: mx.array

    @property
    def length(self) -> int:
        """Number of tokens this call processed."""
        return self.args[0].shape[1]

    def conv_state_after(self, r: int) -> mx.array:
        """The conv state after the first r tokens of this call (a window as long as the one it started from)."""
        if self.conv_input is None:
            raise RollbackError(
                "a linear-attention layer ran gated_delta_update without its conv1d first: "
                "its conv state cannot be rolled back"
            )
        keep = self.conv_input.shape[1] - self.length
        return mx.contiguous(self.conv_input[:, r : r + keep, :])

    def state_after(self, r: int, original: GatedDeltaUpdate) -> mx.array:
        """The recurrent state after the first r tokens, replayed with mlx-lm's kernel."""
        if r == self.length:
            return self.state_out
        q, k, v, a, b, a_log, dt_bias, mask = self.args
        cut = [x[:, :r] for x in (q, k, v, a, b)]
        mask = None if mask is None else mask[:, :r]
        _, state = original(*cut, a_log, dt_bias, self.state_in, mask, **self.kwargs)
        return state


class Recorder:
    """Collects GdnCall records, in call order, for one model's forward passes."""

    def __init__(self) -> None:
        self.calls: list[GdnCall] = []
        self._conv_input: mx.array | None = None


def active_recorder() -> Recorder | None:
    """The recorder active on this thread, if any."""
    return getattr(_local, "recorder", None)


@contextmanager
def recording(recorder: Recorder) -> Iterator[Recorder]:
    """Record linear-attention calls made on this thread inside the block."""
    previous = active_recorder()
    _local.recorder = recorder
    try:
        yield recorder
    finally:
        _local.recorder = previous


def _recording_conv_class(cls: type) -> type:
    """The recording subclass of a conv class (a recording class is its own)."""
    if cls in _recording_classes.values():
        return cls
    if cls not in _recording_classes:

        def __call__(self: Any, x: mx.array) -> Any:
            rec = active_recorder()
            if rec is not None:
                rec._conv_input = x
            return cls.__call__(self, x)

        _recording_classes[cls] = type(f"Recording{cls.__name__}", (cls,), {"__call__": __call__})
    return _recording_classes[cls]


def _wrap_update(original: GatedDeltaUpdate) -> GatedDeltaUpdate:
    def gated_delta_update(
        q: mx.array,
        k: mx.array,
        v: mx.array,
        a: mx.array,
        b: mx.array,
        A_log: mx.array,
        dt_bias: mx.array,
        state: mx.array | None = None,
        mask: mx.array | None = None,
        **kwargs: Any,
    ) -> tuple[mx.array, mx.array]:
        out, new_state = original(q, k, v, a, b, A_log, dt_bias, state, mask, **kwargs)
        rec = active_recorder()
        if rec is not None:
            args: GdnArgs = (q, k, v, a, b, A_log, dt_bias, mask)
            rec.calls.append(GdnCall(rec._conv_input, args, kwargs, state, new_state))
            rec._conv_input = None
        return out, new_state

    return gated_delta_update


def install(model: LanguageModel) -> int:
    """Hook every Gated DeltaNet layer of the model whose kernel fits (see specchat.upstream.mlx_lm.model_check);
    returns how many were hooked. A layer left alone still runs; it just cannot be rolled back."""
    hooked = 0
    for _, layer in model.named_modules():
        if is_gated_delta_layer(layer) and wrap_gated_delta_update(layer, _wrap_update):
            swap_conv_class(layer, _recording_conv_class)
            hooked += 1
    return hooked
