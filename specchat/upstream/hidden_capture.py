"""A target's forward pass that also hands back the outputs of chosen layers, without patching the model.

DFlash drafts from the outputs of a few of the target's layers (HF `hidden_states[i + 1]` for layer i).
Instead of wrapping those layers, `capture_forward` runs what mlx-lm's own `__call__` runs, step by step:
embed -> every layer with its mask and cache -> final norm -> lm_head (or the tied embeddings), keeping
the requested layers' outputs on the way. The layers themselves are called unchanged, so Gated DeltaNet
recording (engine/gdn_capture.py) and every cache update happen exactly as in a plain call.

Internals used (checked by `capture_problem` before a model is accepted):
- qwen3, qwen3_moe, llama: `model.model.{embed_tokens, layers, norm}`, `model.args.tie_word_embeddings`,
  `model.lm_head`; one attention mask for every layer (`create_attention_mask(h, cache[0])`); a llama
  with sliding-window layers (`model.model.swa_idx` set) is refused;
- qwen3_5 / qwen3_5_moe / qwen3_next (hybrid): `model.language_model.model` (qwen3_next: `model.model`),
  each layer's `is_linear`: linear layers take `create_ssm_mask(h, cache of the first linear layer)`,
  attention layers `create_attention_mask(h, cache of the first attention layer)`;
- `rope_utils.initialize_rope` for the drafter's own rotary embedding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import mlx.core as mx
from mlx_lm.models.base import create_attention_mask, create_ssm_mask
from mlx_lm.models.rope_utils import initialize_rope

__all__ = [
    "CAPTURE_MODEL_TYPES",
    "capture_forward",
    "capture_problem",
    "embed_tokens",
    "make_rope",
    "num_layers",
    "project_logits",
    "text_model",
]

# The model types whose mlx-lm __call__ capture_forward reproduces (the MoE ones differ only inside a layer).
CAPTURE_MODEL_TYPES = (
    "qwen3",
    "qwen3_moe",
    "qwen3_5",
    "qwen3_5_text",
    "qwen3_5_moe",
    "qwen3_5_moe_text",
    "qwen3_next",
    "llama",
)


def text_model(model: Any) -> Any:
    """The part of an mlx-lm model that holds `args`, `model` (embed, layers, norm) and `lm_head`."""
    return getattr(model, "language_model", model)


def _inner(model: Any) -> Any:
    return text_model(model).model


def _layers(model: Any) -> list[Any]:
    inner = _inner(model)
    layers = getattr(inner, "pipeline_layers", None)
    return list(inner.layers if layers is None else layers)


def num_layers(model: Any) -> int:
    """How many decoder layers the target runs."""
    return len(_layers(model))


def embed_tokens(model: Any) -> Any:
    """The target's token embedding (an nn.Embedding: call it on ids)."""
    return _inner(model).embed_tokens


def project_logits(model: Any, hidden: mx.array) -> mx.array:
    """Hidden states (already normed) to logits with the target's lm_head, or its tied embeddings."""
    text = text_model(model)
    if text.args.tie_word_embeddings:
        return cast(mx.array, text.model.embed_tokens.as_linear(hidden))
    return cast(mx.array, text.lm_head(hidden))


def capture_problem(model: Any) -> str | None:
    """Why capture_forward cannot run this model; None when it can."""
    text = text_model(model)
    model_type = getattr(getattr(text, "args", None), "model_type", None) or getattr(model, "model_type", None)
    if model_type not in CAPTURE_MODEL_TYPES:
        return f"model type {model_type!r} is not one whose layers SpecChat can read ({', '.join(CAPTURE_MODEL_TYPES)})"
    inner = getattr(text, "model", None)
    for name in ("embed_tokens", "layers", "norm"):
        if not hasattr(inner, name):
            return f"the mlx-lm {model_type} model no longer has `model.{name}`"
    if not hasattr(getattr(text, "args", None), "tie_word_embeddings"):
        return f"the mlx-lm {model_type} model no longer has `args.tie_word_embeddings`"
    if getattr(inner, "swa_idx", None) is not None:
        return f"the {model_type} model has sliding-window attention layers"
    if getattr(inner, "pipeline_size", 1) != 1 or getattr(text, "sharding_group", None) is not None:
        return "the target is split over several ranks"
    return None


def _masks(model: Any, h: mx.array, caches: Sequence[Any]) -> list[Any]:
    """Each layer's mask, as mlx-lm's own __call__ builds them."""
    layers = _layers(model)
    linear = [bool(getattr(layer, "is_linear", False)) for layer in layers]
    fa = next((i for i, is_lin in enumerate(linear) if not is_lin), None)
    ssm = next((i for i, is_lin in enumerate(linear) if is_lin), None)
    fa_mask = None if fa is None else create_attention_mask(h, caches[fa])
    ssm_mask = None if ssm is None else create_ssm_mask(h, caches[ssm])
    return [ssm_mask if is_lin else fa_mask for is_lin in linear]


def capture_forward(
    model: Any, inputs: mx.array, caches: Sequence[Any] | None, layer_ids: Sequence[int]
) -> tuple[mx.array, list[mx.array]]:
    """model(inputs, cache=caches)'s logits, and the outputs of the layers in layer_ids (each (B, T, H))."""
    layers = _layers(model)
    inner = _inner(model)
    cache_list: Sequence[Any] = caches if caches is not None else [None] * len(layers)
    h = inner.embed_tokens(inputs)
    masks = _masks(model, h, cache_list)
    wanted, outputs = set(layer_ids), {}
    for i, (layer, mask, c) in enumerate(zip(layers, masks, cache_list)):
        h = layer(h, mask=mask, cache=c)
        if i in wanted:
            outputs[i] = h
    if any(i not in outputs for i in layer_ids):
        raise ValueError(f"layer ids {list(layer_ids)} reach past the model's {len(layers)} layers")
    # A layer may be named twice (a config's default ids over a shallow target): its output, twice.
    return project_logits(model, inner.norm(h)), [outputs[i] for i in layer_ids]


def make_rope(head_dim: int, base: float, scaling: dict[str, Any] | None, max_positions: int | None) -> Any:
    """mlx-lm's rotary embedding for these settings (non-traditional, as Qwen3 uses)."""
    return initialize_rope(
        head_dim, base=base, traditional=False, scaling_config=scaling, max_position_embeddings=max_positions
    )
