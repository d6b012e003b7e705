"""Record the inputs of every Gated DeltaNet call during a speculative round.

mlx-lm's linear-attention layers keep a recurrent state that cannot be sliced. To
keep only the first r tokens of a round we keep, per call, the conv input and the
arguments of mlx-lm's own `gated_delta_update`, and replay it over r tokens. Off the
GPU mlx-lm runs that recurrence as a per-token loop of ops, so the state after every
token is computed anyway: there (CAPTURE_STATES) we run the same loop and keep them,
and a partial keep needs no replay. The hooks pass straight through when no recorder
is active on the calling thread.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass

import mlx.core as mx
from mlx_lm.models import gated_delta

# None: keep per-token states where mlx-lm's recurrence is a per-token loop (off the GPU); True/False force it.
CAPTURE_STATES: bool | None = None
_STEPWISE_KWARGS = {"use_kernel", "lower_bound", "allow_neg_eigval"}

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
    states: list[mx.array] | None = None  # the state after each token, when captured

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
        if self.states is not None:
            return self.states[r - 1]
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


def captures_states(original, kwargs: dict) -> bool:
    """Whether a recorded call runs stepwise, keeping every state (see CAPTURE_STATES)."""
    wanted = CAPTURE_STATES if CAPTURE_STATES is not None else mx.default_device().type != mx.DeviceType.gpu
    return wanted and original is gated_delta.gated_delta_update and set(kwargs) <= _STEPWISE_KWARGS


def stepwise_update(q, k, v, a, b, A_log, dt_bias, state=None, mask=None, *, use_kernel=True,
                    lower_bound=None, allow_neg_eigval=False):
    """mlx-lm's gated_delta_update as it runs off the GPU (its ops loop), with the state after each token."""
    beta = mx.sigmoid(b)
    if allow_neg_eigval:
        beta = beta * 2.0
    if lower_bound is None:
        g = gated_delta.compute_g(A_log, a, dt_bias)
    else:
        g = gated_delta.compute_lower_bound_g(A_log, a, dt_bias, lower_bound)
    batch, length, k_heads, k_dim = q.shape
    v_heads, v_dim = v.shape[-2:]
    if state is None:
        state = mx.zeros((batch, v_heads, v_dim, k_dim), dtype=mx.float32)
    if (repeat := v_heads // k_heads) > 1:
        q, k = mx.repeat(q, repeat, -2), mx.repeat(k, repeat, -2)
    ys, states = [], []
    for t in range(length):
        y, state = gated_delta._gated_delta_step_ops(
            q[:, t], k[:, t], v[:, t], g[:, t], beta[:, t], state, None if mask is None else mask[:, t])
        ys.append(y)
        states.append(state)
    return mx.stack(ys, axis=1), states


def _wrap_update(original):
    def gated_delta_update(q, k, v, a, b, A_log, dt_bias, state=None, mask=None, **kwargs):
        rec = active_recorder()
        states = None
        if rec is not None and captures_states(original, kwargs):
            out, states = stepwise_update(q, k, v, a, b, A_log, dt_bias, state, mask, **kwargs)
            new_state = states[-1]
        else:
            out, new_state = original(q, k, v, a, b, A_log, dt_bias, state, mask, **kwargs)
        if rec is not None:
            args = (q, k, v, a, b, A_log, dt_bias, mask)
            rec.calls.append(GdnCall(rec._conv_input, args, kwargs, state, new_state, states))
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
