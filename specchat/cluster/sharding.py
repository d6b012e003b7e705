"""Load a target split over the ranks with mlx-lm's own tensor parallelism (model.shard(group))."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import mlx.core as mx

from specchat.engine.errors import ModelLoadError
from specchat.engine.loading import LoadedModel, read_config
from specchat.upstream.mlx_lm import load as mlx_load
from specchat.upstream.mlx_lm import shard_keeping_head

# config.json fields that shard(group) divides by the number of ranks
SPLIT_FIELDS = (
    "num_attention_heads",
    "num_key_value_heads",
    "intermediate_size",
    "linear_num_key_heads",
    "linear_num_value_heads",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
)


def text_config(config: dict) -> dict:
    """The language model's section of config.json (text_config for multimodal folders)."""
    return config.get("text_config", config)


def check_divisible(config: dict, ranks: int, name: str) -> None:
    """ModelLoadError naming the field when a sharded size does not divide by the number of ranks."""
    text = text_config(config)
    for field in SPLIT_FIELDS:
        value = text.get(field)
        if not isinstance(value, int) or value % ranks == 0:
            continue
        if (
            field == "num_key_value_heads"
            and str(text.get("model_type", "")).startswith("qwen3_5")
            and ranks % value == 0
        ):
            continue  # qwen3_5 repeats key/value heads when there are more ranks than heads
        raise ModelLoadError(
            f"{name} cannot be split over {ranks} ranks: its {field} is {value}, not a multiple of {ranks}"
        )


def load_sharded(path: str | Path, group: mx.distributed.Group) -> LoadedModel:
    """Load a model folder and keep only this rank's shard of each layer (embeddings and head replicated)."""
    path = Path(path).expanduser().resolve()
    if not path.is_dir():
        raise ModelLoadError(f"model folder not found: {path}")
    config = read_config(path)
    if not any(path.glob("model*.safetensors")):
        raise ModelLoadError(f"{path} has no model*.safetensors weights")
    check_divisible(config, group.size(), path.name)
    try:
        loaded = mlx_load(str(path), lazy=True, return_config=True, trust_remote_code=False)
        # mlx-lm annotates load() as its 2- or its 3-tuple; return_config=True gives the 3-tuple
        model, tokenizer, config = cast(tuple[Any, Any, dict[str, Any]], loaded)
    except Exception as exc:  # mlx-lm raises ValueError/KeyError/OSError for bad folders
        raise ModelLoadError(f"cannot load {path}: {type(exc).__name__}: {exc}") from exc
    if not hasattr(model, "shard"):
        raise ModelLoadError(
            f"{path.name}: mlx-lm's {config.get('model_type')} model has no shard(): "
            "it cannot be split over several machines"
        )
    shard_keeping_head(model, group)
    mx.eval(model.parameters())
    return LoadedModel(model, tokenizer, config, path)
