"""Record the inputs of every Gated DeltaNet call during a speculative round.

mlx-lm's linear-attention layers keep a recurrent state that cannot be sliced. To
keep only the first r tokens of a round we keep, per call, the conv input and the
arguments of mlx-lm's own `gated_delta_update`, and replay it over r tokens. The
hooks pass straight through when no recorder is active on the calling thread.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass

import mlx.core as mx

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

    gated_delta_update.specchat_original = original
    return gated_delta_update


def is_gated_delta_layer(module) -> bool:
    """True for an mlx-lm Gated DeltaNet layer (conv1d + A_log + dt_bias)."""
    return all(hasattr(module, name) for name in ("conv1d", "A_log", "dt_bias"))


def original_update(module):
    """mlx-lm's own gated_delta_update used by this layer's module."""
    fn = sys.modules[type(module).__module__].gated_delta_update
    return getattr(fn, "specchat_original", fn)


def install(model) -> int:
    """Hook every Gated DeltaNet layer of the model; returns how many were found."""
    layers = [m for _, m in model.named_modules() if is_gated_delta_layer(m)]
    for layer in layers:
        conv = layer.conv1d
        if type(conv) not in _recording_classes.values():
            conv.__class__ = _recording_conv_class(type(conv))
        module = sys.modules[type(layer).__module__]
        if not hasattr(module.gated_delta_update, "specchat_original"):
            module.gated_delta_update = _wrap_update(module.gated_delta_update)
    return len(layers)
