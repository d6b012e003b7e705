"""Load a DFlash drafter folder for a target, refusing clearly whatever would not fit it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlx.core as mx
from mlx.utils import tree_flatten

from specchat.upstream.hidden_capture import capture_problem, num_layers, text_model

from .dflash_model import DFlashConfig, DFlashModel
from .errors import ModelLoadError
from .loading import LoadedModel, read_config, vocab_size

HEAD_KEYS = ("lm_head.weight", "embed_tokens.weight")


@dataclass
class DFlashWeights:
    """A loaded DFlash drafter: its network (weights in) and its config; `name` is its folder's."""

    model: DFlashModel
    config: DFlashConfig
    path: Path

    @property
    def name(self) -> str:
        """The folder name, used in messages."""
        return self.path.name


def _strip(name: str) -> str:
    return name[len("model.") :] if name.startswith("model.") else name


def read_weights(folder: Path) -> dict[str, mx.array]:
    """Every tensor of the folder's safetensors files, `model.` prefixes dropped."""
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise ModelLoadError(f"{folder.name} has no .safetensors weights")
    weights: dict[str, mx.array] = {}
    for file in files:
        loaded = mx.load(str(file))
        assert isinstance(loaded, dict)
        for name, value in loaded.items():
            weights[_strip(name)] = value
    return weights


def _target_hidden(target: LoadedModel) -> int:
    args: Any = getattr(text_model(target.model), "args", None)
    return int(getattr(args, "hidden_size", 0))


def check_pairing(cfg: DFlashConfig, target: LoadedModel, name: str) -> None:
    """ModelLoadError when the drafter cannot read this target (its layers, width, vocabulary)."""
    problem = capture_problem(target.model)
    if problem:
        raise ModelLoadError(f"DFlash cannot read the layers of {target.name}: {problem}")
    hidden = _target_hidden(target)
    if cfg.hidden_size != hidden:
        raise ModelLoadError(
            f"{name} has hidden_size {cfg.hidden_size} but {target.name} has {hidden}: it drafts for another target"
        )
    depth = num_layers(target.model)
    past = [i for i in cfg.target_layer_ids if not 0 <= i < depth]
    if past:
        raise ModelLoadError(
            f"{name} reads target layers {past}, past the {depth} layers of {target.name} (ids run 0..{depth - 1})"
        )
    if cfg.num_target_layers is not None and cfg.num_target_layers != depth:
        raise ModelLoadError(
            f"{name} was trained on a target of {cfg.num_target_layers} layers; {target.name} has {depth}"
        )
    vocab = vocab_size(target)
    if not 0 <= cfg.mask_token_id < vocab:
        raise ModelLoadError(
            f"{name}'s mask_token_id {cfg.mask_token_id} is outside {target.name}'s vocabulary 0..{vocab - 1}"
        )
    if cfg.block_size < 2:
        raise ModelLoadError(f"{name}'s block_size is {cfg.block_size}: a block drafts block_size - 1 tokens")


def check_weights(model: DFlashModel, weights: dict[str, mx.array], name: str) -> None:
    """ModelLoadError naming an lm_head or embedding, missing or extra tensors, or a shape that does not fit."""
    head = [k for k in weights if k in HEAD_KEYS]
    if head:
        raise ModelLoadError(f"{name} holds {head}: a DFlash drafter uses the target's embeddings and lm_head")
    expected = dict(tree_flatten(model.parameters()))
    missing = sorted(set(expected) - set(weights))
    if missing:
        raise ModelLoadError(f"{name} is missing tensors: {', '.join(missing[:8])}")
    extra = sorted(set(weights) - set(expected))
    if extra:
        raise ModelLoadError(f"{name} has tensors a DFlash drafter does not have: {', '.join(extra[:8])}")
    for key, value in expected.items():
        assert isinstance(value, mx.array)
        if tuple(weights[key].shape) != tuple(value.shape):
            raise ModelLoadError(
                f"{name}: {key} has shape {tuple(weights[key].shape)}, the config calls for {tuple(value.shape)}"
            )


def load_dflash(folder: str | Path, target: LoadedModel) -> DFlashWeights:
    """Load a DFlash folder (config.json + safetensors) to draft for target; ModelLoadError when it cannot."""
    path = Path(folder)
    cfg = DFlashConfig.from_dict(read_config(path), f"{path.name}/config.json")
    check_pairing(cfg, target, path.name)
    model = DFlashModel(cfg)
    weights = read_weights(path)
    check_weights(model, weights, path.name)
    model.load_weights(list(weights.items()))
    mx.eval(model.parameters())
    model.eval()
    return DFlashWeights(model, cfg, path)
