"""The DFlash drafter's network (arXiv 2602.06036): a few Qwen3-style layers that draft a block of tokens in
one pass from the target's own hidden states, and its config as published (`config.json` + `dflash_config`).

The drafter has no embeddings and no lm_head: the block's tokens are embedded with the target's table and
its rows projected with the target's head (after the drafter's own final norm). What it reads of the target
is the outputs of the layers in `target_layer_ids`, concatenated on the feature axis, through `fc` and
`hidden_norm`: the context. Each drafter layer projects the context rows with its own k/v projections
(k_norm, RoPE at their absolute positions) into a context-only KV cache. A block of B rows ([last token] +
B - 1 mask tokens, at positions p..p+B-1) attends to that cache and to itself, bidirectionally (causally
where the config sets `is_causal`); the block's own keys and values never enter the cache.

Sliding-window layers (`layer_types` "sliding_attention", `sliding_window` W), as the reference runs them: the
block row at position q sees the context positions q - W + 1..p - 1 (a window over absolute positions, so
later rows see less context) and every row of the block (rows of sliding layers see each other causally
unless the config sets `is_causal` false; full layers are bidirectional unless it sets it true). The context
cache keeps every position in every layer, so trimming it back stays exact; attention reads only the window.

Checked against z-lab's reference MLX implementation (tests/engine/test_dflash_reference.py). What the
reference also knows and this network does not run is refused by name: logit scaling or soft-capping (the
target's head makes the logits, outside this module). DFlash2 is dflash2_model.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import mlx.core as mx
import mlx.nn as nn

from specchat.upstream.hidden_capture import make_rope
from specchat.upstream.mlx_lm import KVCache

from .errors import ModelLoadError

DEFAULT_BLOCK_SIZE = 16
FULL, SLIDING = "full_attention", "sliding_attention"
LAYER_TYPES = (FULL, SLIDING)


def default_layer_ids(num_target_layers: int, num_draft_layers: int) -> list[int]:
    """The reference's target layers when a config names none: spread from layer 1 to depth - 3."""
    if num_draft_layers == 1:
        return [num_target_layers // 2]
    start, end = 1, num_target_layers - 3
    return [round(start + i * (end - start) / (num_draft_layers - 1)) for i in range(num_draft_layers)]


@dataclass(frozen=True)
class DFlashConfig:
    """What a DFlash folder's config.json says (dflash_config nested or at the top level)."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    rms_norm_eps: float
    rope_theta: float
    block_size: int
    mask_token_id: int
    target_layer_ids: tuple[int, ...]
    num_target_layers: int | None = None
    max_position_embeddings: int | None = None
    rope_scaling: dict[str, object] | None = None
    layer_types: tuple[str, ...] = field(default_factory=tuple)
    sliding_window: int | None = None  # W: a sliding layer's block row at q sees context from q - W + 1 on
    # The block attends to itself causally (True), bidirectionally (False); None: causally in sliding layers.
    is_causal: bool | None = None
    input_embedding_scale: float = 1.0  # the block's embeddings are scaled by this first

    @classmethod
    def from_dict(cls, config: Mapping[str, object], source: str = "config.json") -> DFlashConfig:
        """Parse a config; ModelLoadError naming the first missing or unusable field."""
        cfg: Mapping[str, Any] = config  # JSON: each field is checked where it is read
        nested = cfg.get("dflash_config")
        dflash: Mapping[str, Any] = nested if isinstance(nested, Mapping) else {}

        def pick(name: str, default: Any = None) -> Any:
            value = dflash.get(name, cfg.get(name, default))
            if value is None:
                raise ModelLoadError(f"{source} has no {name!r} (neither at the top level nor in dflash_config)")
            return value

        rope = cfg.get("rope_parameters") or cfg.get("rope_scaling")
        rope_dict = rope if isinstance(rope, dict) else None
        theta = cfg.get("rope_theta") or (rope_dict or {}).get("rope_theta") or 10000.0
        heads = int(pick("num_attention_heads"))
        layers = int(pick("num_hidden_layers"))
        target_layers = dflash.get("num_target_layers", cfg.get("num_target_layers"))
        ids = dflash.get("target_layer_ids", cfg.get("target_layer_ids"))
        if ids is None:
            if target_layers is None:
                raise ModelLoadError(f"{source} names neither target_layer_ids nor num_target_layers")
            ids = default_layer_ids(int(target_layers), layers)
        layer_types = tuple(cfg.get("layer_types") or (FULL,) * layers)
        window = _sliding_window(cfg, layer_types, layers, source)
        _refuse_logit_changes(cfg, dflash, source)
        causal = cfg.get("is_causal")
        return cls(
            hidden_size=int(pick("hidden_size")),
            num_hidden_layers=layers,
            num_attention_heads=heads,
            num_key_value_heads=int(pick("num_key_value_heads", heads)),
            head_dim=int(pick("head_dim", int(pick("hidden_size")) // heads)),
            intermediate_size=int(pick("intermediate_size")),
            rms_norm_eps=float(pick("rms_norm_eps", 1e-6)),
            rope_theta=float(theta),
            block_size=int(pick("block_size", DEFAULT_BLOCK_SIZE)),
            mask_token_id=int(pick("mask_token_id")),
            target_layer_ids=tuple(int(i) for i in ids),
            num_target_layers=None if target_layers is None else int(target_layers),
            max_position_embeddings=cfg.get("max_position_embeddings"),
            rope_scaling=rope_dict if rope_dict and rope_dict.get("rope_type", "default") != "default" else None,
            layer_types=layer_types,
            sliding_window=window,
            is_causal=None if causal is None else bool(causal),
            input_embedding_scale=float(dflash.get("input_embedding_scale", 1.0)),
        )


def _sliding_window(cfg: Mapping[str, Any], layer_types: tuple[str, ...], layers: int, source: str) -> int | None:
    """The window of the sliding layers (None without any); ModelLoadError for unknown types, a count that
    is not the depth, or sliding layers without a window of at least 1."""
    unknown = sorted(set(layer_types) - set(LAYER_TYPES))
    if unknown:
        raise ModelLoadError(f"{source}: layer types {unknown} are not supported (only {', '.join(LAYER_TYPES)})")
    if len(layer_types) != layers:
        raise ModelLoadError(f"{source}: {len(layer_types)} layer_types for {layers} layers")
    if SLIDING not in layer_types:
        return None
    window = cfg.get("sliding_window")
    if window is None or int(window) < 1:
        raise ModelLoadError(f"{source}: sliding_attention layers need a sliding_window of at least 1, not {window}")
    return int(window)


def _refuse_logit_changes(cfg: Mapping[str, Any], dflash: Mapping[str, Any], source: str) -> None:
    """ModelLoadError for logit settings the reference applies and this drafter would silently ignore."""
    multiplier = dflash.get("output_multiplier", 1.0)
    if multiplier is not None and float(multiplier) != 1.0:
        raise ModelLoadError(f"{source}: output_multiplier {multiplier} is not supported (only 1.0)")
    cap = dflash.get("final_logit_softcapping", cfg.get("final_logit_softcapping"))
    if cap:
        raise ModelLoadError(f"{source}: final_logit_softcapping {cap} is not supported (only none)")


class DFlashAttention(nn.Module):
    """Attention whose keys are the context rows (cached) and the block's own rows (not cached)."""

    def __init__(self, cfg: DFlashConfig, layer_type: str = FULL):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.scale = cfg.head_dim**-0.5
        sliding = layer_type == SLIDING
        self.window = cfg.sliding_window if sliding else None
        self.causal = sliding if cfg.is_causal is None else cfg.is_causal  # causal: row i sees rows 0..i
        dim = cfg.hidden_size
        self.q_proj = nn.Linear(dim, self.n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dim, self.n_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, self.n_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.n_heads * self.head_dim, dim, bias=False)
        self.q_norm = nn.RMSNorm(self.head_dim, eps=cfg.rms_norm_eps)
        self.k_norm = nn.RMSNorm(self.head_dim, eps=cfg.rms_norm_eps)

    def _kv(self, x: mx.array, rope: Rope, offset: int) -> tuple[mx.array, mx.array]:
        b, t, _ = x.shape
        keys = self.k_norm(self.k_proj(x).reshape(b, t, self.n_kv_heads, -1)).transpose(0, 2, 1, 3)
        values = self.v_proj(x).reshape(b, t, self.n_kv_heads, -1).transpose(0, 2, 1, 3)
        return rope(keys, offset=offset), values

    def add_context(self, context: mx.array, cache: KVCache, rope: Rope) -> None:
        """Append the context rows (1, T, H) to the cache, at positions offset..offset+T-1."""
        keys, values = self._kv(context, rope, cache.offset)
        cache.update_and_fetch(keys, values)

    def __call__(self, x: mx.array, cache: KVCache, rope: Rope) -> mx.array:
        b, length, _ = x.shape
        offset = int(cache.offset)
        queries = self.q_norm(self.q_proj(x).reshape(b, length, self.n_heads, -1)).transpose(0, 2, 1, 3)
        queries = rope(queries, offset=offset)
        keys, values = self._kv(x, rope, offset)
        first = 0 if self.window is None else max(0, offset - self.window + 1)  # the oldest position row 0 sees
        if offset > first:
            assert cache.keys is not None and cache.values is not None  # it holds offset > 0 positions
            keys = mx.concatenate([cache.keys[..., first:offset, :], keys], axis=2)
            values = mx.concatenate([cache.values[..., first:offset, :], values], axis=2)
        mask = self._mask(length, offset, first)
        out = mx.fast.scaled_dot_product_attention(queries, keys, values, scale=self.scale, mask=mask)
        return self.o_proj(out.transpose(0, 2, 1, 3).reshape(b, length, -1))

    def _mask(self, length: int, offset: int, first: int) -> mx.array | str | None:
        """Which keys (context positions first..offset-1, then the block's rows) each block row may see."""
        if self.window is None:
            return "causal" if self.causal else None
        rows = mx.arange(offset, offset + length)[:, None]  # the block rows' absolute positions
        context = (rows - mx.arange(first, offset)[None]) < self.window
        block = mx.arange(offset, offset + length)[None] <= rows if self.causal else mx.ones((length, length), mx.bool_)
        return mx.concatenate([context, block], axis=1)


class DFlashMLP(nn.Module):
    """SwiGLU, as Qwen3."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def __call__(self, x: mx.array) -> mx.array:
        return self.down_proj(nn.silu(self.gate_proj(x)) * self.up_proj(x))


class DFlashLayer(nn.Module):
    """A Qwen3 decoder layer whose attention also reads the context cache."""

    def __init__(self, cfg: DFlashConfig, layer_type: str = FULL):
        super().__init__()
        self.self_attn = DFlashAttention(cfg, layer_type)
        self.mlp = DFlashMLP(cfg.hidden_size, cfg.intermediate_size)
        self.input_layernorm = nn.RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_attention_layernorm = nn.RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)

    def __call__(self, x: mx.array, cache: KVCache, rope: Rope) -> mx.array:
        h = x + self.self_attn(self.input_layernorm(x), cache, rope)
        return h + self.mlp(self.post_attention_layernorm(h))


class Rope(Protocol):
    """mlx-lm's rotary embedding: x rotated for positions offset, offset + 1, ..."""

    def __call__(self, x: mx.array, offset: int = 0) -> mx.array: ...


class RowScorer(Protocol):
    """Scores over the vocabulary for one draft position, given the token drafted before it."""

    def row(self, position: int, predecessor: int | mx.array) -> mx.array: ...


def layer_kinds(cfg: DFlashConfig) -> tuple[str, ...]:
    """Each layer's attention type (all full where the config lists none)."""
    return cfg.layer_types or (FULL,) * cfg.num_hidden_layers


class DFlashModel(nn.Module):
    """fc + hidden_norm over the target's layers, the drafter's layers, its final norm."""

    def __init__(self, cfg: DFlashConfig):
        super().__init__()
        self.config = cfg
        width = len(cfg.target_layer_ids) * cfg.hidden_size
        self.fc = nn.Linear(width, cfg.hidden_size, bias=False)
        self.hidden_norm = nn.RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.layers = [DFlashLayer(cfg, kind) for kind in layer_kinds(cfg)]
        self.norm = nn.RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self._rope = make_rope(cfg.head_dim, cfg.rope_theta, cfg.rope_scaling, cfg.max_position_embeddings)

    def make_cache(self) -> list[KVCache]:
        """One context-only KV cache per layer, every position kept (sliding layers too: exact trims)."""
        return [KVCache() for _ in self.layers]

    def add_context(self, features: mx.array, caches: Sequence[KVCache]) -> None:
        """Append context rows: the target's captured layers (T, n * H) for the next T positions."""
        context = self.hidden_norm(self.fc(features))[None]
        for layer, cache in zip(self.layers, caches):
            layer.self_attn.add_context(context, cache, self._rope)

    def path_scorer(self, hidden: mx.array, logits: mx.array) -> RowScorer | None:
        """What picks each draft position's token among its candidates (DFlash2's selector); None: the logits do."""
        return None

    def block(self, embeds: mx.array, caches: Sequence[KVCache]) -> mx.array:
        """The block's rows (L, H) after the drafter's final norm, from their embeddings (L, H); the block's
        first row sits right after the context the caches hold."""
        h = embeds[None]
        if self.config.input_embedding_scale != 1.0:
            h = h * self.config.input_embedding_scale
        for layer, cache in zip(self.layers, caches):
            h = layer(h, cache, self._rope)
        out: mx.array = self.norm(h)
        return out[0]
