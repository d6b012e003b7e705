"""Load a DFlash or DFlash2 drafter folder for a target, refusing clearly whatever would not fit it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlx.core as mx
from mlx.utils import tree_flatten

from specchat.upstream.hidden_capture import capture_problem, num_layers, text_model

from .dflash2_model import DFLASH2_KEYS, DFlash2Config, DFlash2Model, is_dflash2
from .dflash_model import DFlashConfig, DFlashModel
from .errors import ModelLoadError
from .loading import LoadedModel, read_config, vocab_size

HEAD_KEYS = ("lm_head.weight", "embed_tokens.weight")
DFLASH2_TENSORS = ("attention_conv.", "mlp_conv.", "candidate_selector.")  # name parts only DFlash2 has


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

    @property
    def kind(self) -> str:
        """ "DFlash2" or "DFlash", for messages."""
        return kind_of(self.model)


def kind_of(model: DFlashModel) -> str:
    """Which drafter a network is, for messages."""
    return "DFlash2" if isinstance(model, DFlash2Model) else "DFlash"


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


def check_selector(cfg: DFlash2Config, target: LoadedModel, name: str) -> None:
    """ModelLoadError when a DFlash2 selector's codebooks do not cover exactly the target's vocabulary."""
    vocab = vocab_size(target)
    if cfg.vocab_size != vocab:
        raise ModelLoadError(
            f"{name}'s candidate selector has codebooks for {cfg.vocab_size} tokens but {target.name} has a "
            f"vocabulary of {vocab}: it drafts for another target"
        )


def _dflash2_tensors(weights: dict[str, mx.array]) -> list[str]:
    return sorted(k for k in weights if any(part in k for part in DFLASH2_TENSORS))


def check_weights(model: DFlashModel, weights: dict[str, mx.array], name: str) -> None:
    """ModelLoadError naming an lm_head or embedding, missing or extra tensors, or a shape that does not fit."""
    kind = kind_of(model)
    head = [k for k in weights if k in HEAD_KEYS]
    if head:
        raise ModelLoadError(f"{name} holds {head}: a {kind} drafter uses the target's embeddings and lm_head")
    newer = _dflash2_tensors(weights)
    if newer and kind == "DFlash":
        raise ModelLoadError(
            f"{name} holds DFlash2 tensors ({', '.join(newer[:4])}) but its config.json describes a DFlash "
            f"drafter: a DFlash2 config names {', '.join(DFLASH2_KEYS)}"
        )
    expected = dict(tree_flatten(model.parameters()))
    missing = sorted(set(expected) - set(weights))
    if missing:
        raise ModelLoadError(f"{name} is missing tensors: {', '.join(missing[:8])}")
    extra = sorted(set(weights) - set(expected))
    if extra:
        raise ModelLoadError(f"{name} has tensors a {kind} drafter does not have: {', '.join(extra[:8])}")
    for key, value in expected.items():
        assert isinstance(value, mx.array)
        if tuple(weights[key].shape) != tuple(value.shape):
            raise ModelLoadError(
                f"{name}: {key} has shape {tuple(weights[key].shape)}, the config calls for {tuple(value.shape)}"
            )


def build_model(raw: Mapping[str, object], target: LoadedModel, name: str) -> tuple[DFlashModel, DFlashConfig]:
    """The drafter network a config describes (DFlash2 when it says so), checked against the target."""
    source = f"{name}/config.json"
    if is_dflash2(raw):
        cfg2 = DFlash2Config.from_dict(raw, source)
        check_pairing(cfg2, target, name)
        check_selector(cfg2, target, name)
        return DFlash2Model(cfg2), cfg2
    cfg = DFlashConfig.from_dict(raw, source)
    check_pairing(cfg, target, name)
    return DFlashModel(cfg), cfg


def load_dflash(folder: str | Path, target: LoadedModel) -> DFlashWeights:
    """Load a DFlash or DFlash2 folder (config.json + safetensors) to draft for target; ModelLoadError when it
    cannot."""
    path = Path(folder)
    model, cfg = build_model(read_config(path), target, path.name)
    weights = read_weights(path)
    check_weights(model, weights, path.name)
    model.load_weights(list(weights.items()))
    mx.eval(model.parameters())
    model.eval()
    return DFlashWeights(model, cfg, path)
