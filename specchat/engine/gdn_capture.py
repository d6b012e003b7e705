"""Record the inputs of every Gated DeltaNet call during a speculative round.

mlx-lm's linear-attention layers keep a recurrent state that cannot be sliced. To
keep only the first r tokens of a round we keep, per call, the conv input and the
arguments of mlx-lm's own `gated_delta_update`, and replay it over r tokens. The
hooks pass straight through when no recorder is active on the calling thread.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass

import mlx.core as mx

from specchat.upstream.mlx_lm import is_gated_delta_layer, swap_conv_class, wrap_gated_delta_update

_local = threading.local()
_recording_classes: dict[type, type] = {}


@dataclass
class GdnCall:
    """One call of one linear-attention layer: its conv input and recurrence arguments."""

    conv_input: mx.array
    args: tuple
    kwargs: dict
    state_in: mx.array | None
    state_out: mx.array

    @property
    def length(self) -> int:
        """Number of tokens this call processed."""
        return self.args[0].shape[1]

    def conv_state_after(self, r: int, keep: int) -> mx.array:
        """The conv state after the first r tokens of this call."""
        return mx.contiguous(self.conv_input[:, r : r + keep, :])

    def state_after(self, r: int, original) -> mx.array:
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

    def __init__(self):
        self.calls: list[GdnCall] = []
        self._conv_input: mx.array | None = None


def active_recorder() -> Recorder | None:
    """The recorder active on this thread, if any."""
    return getattr(_local, "recorder", None)


@contextmanager
def recording(recorder: Recorder):
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

        def __call__(self, x):
            rec = active_recorder()
            if rec is not None:
                rec._conv_input = x
            return cls.__call__(self, x)

        _recording_classes[cls] = type(f"Recording{cls.__name__}", (cls,), {"__call__": __call__})
    return _recording_classes[cls]


def _wrap_update(original):
    def gated_delta_update(q, k, v, a, b, A_log, dt_bias, state=None, mask=None, **kwargs):
        out, new_state = original(q, k, v, a, b, A_log, dt_bias, state, mask, **kwargs)
        rec = active_recorder()
        if rec is not None:
            args = (q, k, v, a, b, A_log, dt_bias, mask)
            rec.calls.append(GdnCall(rec._conv_input, args, kwargs, state, new_state))
            rec._conv_input = None
        return out, new_state

    return gated_delta_update


def install(model) -> int:
    """Hook every Gated DeltaNet layer of the model whose kernel fits (see specchat.upstream.mlx_lm.model_check);
    returns how many were hooked. A layer left alone still runs; it just cannot be rolled back."""
    hooked = 0
    for _, layer in model.named_modules():
        if is_gated_delta_layer(layer) and wrap_gated_delta_update(layer, _wrap_update):
            swap_conv_class(layer, _recording_conv_class)
            hooked += 1
    return hooked
