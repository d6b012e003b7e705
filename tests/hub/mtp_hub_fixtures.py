"""An original Qwen3.5-style checkpoint with an MTP head, in Hugging Face's layout, and local conversions without it.

The original is made from a tiny hybrid MTP fixture (tests/fixtures/mtp_models.py) by undoing what
mlx-lm's conversion does: names back to `model.language_model.*`, RMSNorm weights as offsets from 1,
conv1d weights as (C, 1, K); the head's `mtp.*` tensors (norms as offsets too) are split over two of
three shards, among other weights, with a model.safetensors.index.json. The first shard also holds a
vision tower tensor (the originals are vision-language checkpoints; mlx-lm's text conversion drops it), which
makes the shards large next to what indexing them reads (huggingface_hub reads a header's first 100 kB).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mlx.core as mx
from mlx_lm.utils import load as mlx_load
from mlx_lm.utils import quantize_model, save_config, save_model

from tests.fixtures.mtp_models import build_hybrid_mtp
from tests.hub.hub_server import FakeRepo

ORIGINAL_REPO = "Tiny/Qwen3.5-Tiny-MTP"
NO_HEAD_REPO = "Tiny/Qwen3.5-Tiny-NoHead"
OTHER_REPO = "Tiny/Qwen3.5-Other-MTP"  # a head for a bigger model: the shapes do not fit
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja")
HF_NORMS = (".input_layernorm.weight", ".post_attention_layernorm.weight", "model.norm.weight", ".q_norm.weight")
HF_NORMS += (".k_norm.weight",)
MTP_NORMS = ("layernorm.weight", "q_norm.weight", "k_norm.weight", "norm.weight")
GROUP_SIZE, BITS = 64, 4
VISION_TENSOR = "model.visual.blocks.0.mlp.linear_fc1.weight"


def _hf_name(name: str) -> str:
    if name.startswith("language_model.model."):
        return "model.language_model." + name.removeprefix("language_model.model.")
    return name.removeprefix("language_model.")


def hf_trunk(weights: dict[str, mx.array]) -> dict[str, mx.array]:
    """mlx-lm qwen3_5 weights back in the original's layout."""
    out = {}
    for name, value in weights.items():
        if "conv1d.weight" in name:
            value = value.moveaxis(2, 1)
        elif value.ndim == 1 and name.endswith(HF_NORMS):
            value = value - 1.0
        out[_hf_name(name)] = value
    return out


def hf_head(head: dict[str, mx.array]) -> dict[str, mx.array]:
    """An mlx head's tensors as the original stores them (norms as offsets from 1)."""
    return {k: (v - 1.0 if v.ndim == 1 and k.endswith(MTP_NORMS) else v) for k, v in head.items()}


def write_original(dst: Path, model_dir: Path, head: dict[str, mx.array] | None) -> Path:
    """Three shards + index + config; the head (when given) in shards 2 and 3 among other weights."""
    dst.mkdir(parents=True, exist_ok=True)
    trunk = hf_trunk(dict(mx.load(str(model_dir / "model.safetensors"))))
    shards: list[dict[str, mx.array]] = [{}, {}, {}]
    for name, value in trunk.items():
        layer = int(name.split(".")[3]) if ".layers." in name else None
        shards[0 if layer is not None and layer < 2 else 1 if layer is not None else 2][name] = value
    for name, value in hf_head(head or {}).items():
        shards[1 if name.startswith("mtp.layers.") else 2][name] = value
    shards[0][VISION_TENSOR] = mx.random.normal((512, 512), key=mx.random.key(7))  # 1 MiB of float32
    weight_map = {}
    for i, shard in enumerate(shards, 1):
        file = f"model-{i:05d}-of-00003.safetensors"
        mx.save_safetensors(str(dst / file), shard, metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(shard, file))
    total = sum(v.nbytes for s in shards for v in s.values())
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    (dst / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    config = json.loads((model_dir / "config.json").read_text())
    (dst / "config.json").write_text(json.dumps(config, indent=2))
    return dst


def head_of(model_dir: Path) -> dict[str, mx.array]:
    """The fixture's own head (its sidecar), as mlx-optiq reads it."""
    return dict(mx.load(str(model_dir / "mtp.safetensors")))


def float_local(dst: Path, model_dir: Path) -> Path:
    """The fixture without its head, with a model card naming the original."""
    shutil.copytree(model_dir, dst, ignore=shutil.ignore_patterns("mtp.safetensors"))
    (dst / "README.md").write_text(f"---\nlibrary_name: mlx\nbase_model:\n- {ORIGINAL_REPO}\n---\n# Tiny\n")
    return dst


def quantized_local(dst: Path, model_dir: Path) -> Path:
    """A 4-bit conversion of the fixture without its head, its config no longer declaring MTP layers."""
    model, _ = mlx_load(str(model_dir))
    config = json.loads((model_dir / "config.json").read_text())
    model, config = quantize_model(model, config, GROUP_SIZE, BITS)
    config["text_config"].pop("mtp_num_hidden_layers", None)
    save_model(dst, model)
    save_config(config, dst / "config.json")
    for name in TOKENIZER_FILES:
        if (model_dir / name).exists():
            shutil.copy(model_dir / name, dst / name)
    return dst


def quantized_reference_head(head: dict[str, mx.array]) -> dict[str, mx.array]:
    """The fixture's head quantized as the local model is: every Linear weight, affine 4-bit, group 64."""
    out = dict(head)
    for name, value in head.items():
        if value.ndim == 2 and (name == "mtp.fc.weight" or name.endswith("_proj.weight")):
            w, s, b = mx.quantize(value, group_size=GROUP_SIZE, bits=BITS)
            base = name.removesuffix(".weight")
            out[name], out[base + ".scales"], out[base + ".biases"] = w, s, b
    return out


def with_head(dst: Path, local: Path, head: dict[str, mx.array], mtp_layers: int = 1) -> Path:
    """A copy of a local model with the given head as its sidecar (the reference to compare with)."""
    shutil.copytree(local, dst)
    (dst / "optiq").mkdir()
    mx.save_safetensors(str(dst / "optiq/mtp.safetensors"), head, metadata={"format": "mlx"})
    config = json.loads((dst / "config.json").read_text())
    config["text_config"]["mtp_num_hidden_layers"] = mtp_layers
    (dst / "config.json").write_text(json.dumps(config))
    return dst


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file of a folder by relative name (for a FakeRepo)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def build_models(root: Path) -> dict[str, Path]:
    """The fixture with its head, the originals on the hub side, and local conversions without the head."""
    fixture = build_hybrid_mtp(root / "fixture", head="agree", fc_noise=0.25)
    bigger = build_hybrid_mtp(root / "bigger", head="agree", hidden=128)
    return {
        "fixture": fixture,
        "original": write_original(root / "original", fixture, head_of(fixture)),
        "no_head": write_original(root / "no_head", fixture, None),
        "other": write_original(root / "other", bigger, head_of(bigger)),
        "float": float_local(root / "float", fixture),
        "quant": quantized_local(root / "quant", fixture),
    }


def hub_repos(models: dict[str, Path]) -> list[FakeRepo]:
    """The three originals as hub repos."""
    return [
        FakeRepo(ORIGINAL_REPO, files_of(models["original"])),
        FakeRepo(NO_HEAD_REPO, files_of(models["no_head"])),
        FakeRepo(OTHER_REPO, files_of(models["other"])),
    ]
