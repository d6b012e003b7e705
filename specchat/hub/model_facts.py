"""Facts about a local model folder read from config.json and file sizes (nothing is loaded)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HYBRID_MODEL_TYPES = ("qwen3_5", "qwen3_next")  # model types whose layers mix linear attention
KV_DTYPE_BYTES = 2  # mlx-lm keeps the KV cache in the model's float16/bfloat16
STATE_DTYPE_BYTES = 4  # Gated DeltaNet recurrent state is float32


@dataclass(frozen=True)
class ModelFacts:
    """Architecture and the sizes that decide memory use."""

    model_type: str
    architecture: str  # "dense" or "hybrid"
    quant_bits: int | None
    context_length: int | None
    num_layers: int
    attention_layers: int
    linear_layers: int
    kv_heads: int
    head_dim: int
    linear_state_bytes: int  # recurrent + conv state of one linear layer, one sequence

    def kv_bytes(self, context: int) -> int:
        """KV cache of every full-attention layer at this many tokens."""
        return self.attention_layers * 2 * self.kv_heads * self.head_dim * context * KV_DTYPE_BYTES

    def recurrent_bytes(self) -> int:
        """Fixed-size state of the linear-attention layers (independent of context)."""
        return self.linear_layers * self.linear_state_bytes


def text_config(config: dict) -> dict:
    """The language model's section: text_config when nested (qwen3_5), else the config itself."""
    nested = config.get("text_config")
    return {**config, **nested} if isinstance(nested, dict) else config


def read_config(folder: Path) -> dict:
    """config.json of a folder as a dict ({} when missing or unreadable)."""
    try:
        data = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def layer_kinds(cfg: dict) -> list[str]:
    """ "full_attention" / "linear_attention" per layer."""
    n = int(cfg.get("num_hidden_layers") or 0)
    kinds = cfg.get("layer_types")
    if isinstance(kinds, list) and len(kinds) == n:
        return [str(k) for k in kinds]
    interval = cfg.get("full_attention_interval")
    if isinstance(interval, int) and interval > 0:
        return ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n)]
    return ["full_attention"] * n


def quant_bits(config: dict) -> int | None:
    """Bits of mlx quantization (the most common when mixed), None when unquantized."""
    quant = config.get("quantization") or config.get("quantization_config")
    if not isinstance(quant, dict):
        return None
    if isinstance(quant.get("bits"), int):
        return quant["bits"]
    per_layer = Counter(v["bits"] for v in quant.values() if isinstance(v, dict) and "bits" in v)
    return per_layer.most_common(1)[0][0] if per_layer else None


def _linear_state_bytes(cfg: dict) -> int:
    k_heads, v_heads = cfg.get("linear_num_key_heads", 0), cfg.get("linear_num_value_heads", 0)
    k_dim, v_dim = cfg.get("linear_key_head_dim", 0), cfg.get("linear_value_head_dim", 0)
    conv_dim = 2 * k_heads * k_dim + v_heads * v_dim
    conv = (cfg.get("linear_conv_kernel_dim", 4) - 1) * conv_dim * KV_DTYPE_BYTES
    return v_heads * k_dim * v_dim * STATE_DTYPE_BYTES + conv


def facts_from_config(config: dict) -> ModelFacts:
    """ModelFacts from a parsed config.json."""
    cfg = text_config(config)
    model_type = str(config.get("model_type") or cfg.get("model_type") or "unknown")
    kinds = layer_kinds(cfg)
    linear = sum(k != "full_attention" for k in kinds)
    hybrid = linear > 0 or model_type.startswith(HYBRID_MODEL_TYPES)
    heads = int(cfg.get("num_attention_heads") or 1)
    head_dim = cfg.get("head_dim") or int(cfg.get("hidden_size") or 0) // heads
    return ModelFacts(
        model_type=model_type,
        architecture="hybrid" if hybrid else "dense",
        quant_bits=quant_bits(config),
        context_length=cfg.get("max_position_embeddings"),
        num_layers=len(kinds),
        attention_layers=len(kinds) - linear,
        linear_layers=linear,
        kv_heads=int(cfg.get("num_key_value_heads") or heads),
        head_dim=int(head_dim),
        linear_state_bytes=_linear_state_bytes(cfg) if linear else 0,
    )


def weights_bytes(folder: Path) -> int:
    """Bytes of the folder's *.safetensors files (what loading reads into memory)."""
    return sum(p.stat().st_size for p in Path(folder).glob("*.safetensors") if p.is_file())


def size_on_disk(folder: Path) -> int:
    """Bytes of every file under the folder, following the cache's symlinks once."""
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())
