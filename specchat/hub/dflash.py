"""DFlash drafters on disk: telling a DFlash folder from a model, checking its files, and whether it fits a target.

A DFlash drafter (e.g. z-lab/Qwen3-8B-DFlash-b16) is config.json (with `block_size` and `dflash_config`
{mask_token_id, target_layer_ids}, nested or at the top level) and safetensors, without embeddings, an
lm_head or a tokenizer: it drafts with its target's. The file checks are the engine's own
(specchat.engine.dflash_load) without a target loaded; the fit to a target is read from both configs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import HubError
from .model_facts import read_config, text_config

DFLASH_KEYS = ("block_size", "mask_token_id", "target_layer_ids")


class NotDFlashError(HubError):
    """A folder meant as a DFlash drafter is not one, or does not fit its target."""


def is_dflash_config(config: Mapping[str, Any]) -> bool:
    """True for a DFlash drafter's config.json (a dflash_config section, a DFlash architecture, or its fields)."""
    if isinstance(config.get("dflash_config"), Mapping):
        return True
    architectures = config.get("architectures")
    if isinstance(architectures, list) and any("dflash" in str(a).lower() for a in architectures):
        return True
    return all(key in config for key in DFLASH_KEYS)


def is_dflash_folder(folder: Path) -> bool:
    """True when the folder's config.json is a DFlash drafter's."""
    return is_dflash_config(read_config(folder))


def check_dflash_files(folder: Path, name: str | None = None) -> Any:
    """The drafter's DFlashConfig when its config and tensors are a DFlash drafter's; NotDFlashError naming why.

    Runs the engine's own checks (the config's fields; no embeddings or lm_head; every tensor present with
    the shape the config calls for) without a target; nothing is evaluated, so no weights are read into memory.
    """
    from specchat.engine.dflash_load import check_weights, read_weights
    from specchat.engine.errors import ModelLoadError

    folder = Path(folder)
    label = name or folder.name
    config = read_config(folder)
    if not config:
        raise NotDFlashError(f"{label} is not a DFlash drafter: it has no readable config.json")
    if not is_dflash_config(config):
        raise NotDFlashError(f"{label} is not a DFlash drafter: its config.json has no dflash_config or block_size")
    try:
        cfg, network = _network(config, f"{label}/config.json")
        check_weights(network, read_weights(folder), label)
    except ModelLoadError as exc:
        raise NotDFlashError(f"{label} is not a usable DFlash drafter: {exc}") from exc
    return cfg


def _network(config: Mapping[str, Any], source: str) -> tuple[Any, Any]:
    """(config, network) of the drafter a config.json describes: DFlash2 when it says so, else DFlash."""
    from specchat.engine.dflash2_model import DFlash2Config, DFlash2Model, is_dflash2
    from specchat.engine.dflash_model import DFlashConfig, DFlashModel

    if is_dflash2(config):
        cfg2 = DFlash2Config.from_dict(config, source)
        return cfg2, DFlash2Model(cfg2)
    cfg = DFlashConfig.from_dict(config, source)
    return cfg, DFlashModel(cfg)


def dflash_target_problems(cfg: Any, target_config: Mapping[str, Any]) -> list[str]:
    """Why a drafter (its DFlashConfig) cannot draft for a target, from the target's config.json alone."""
    text = text_config(dict(target_config))
    problems = []
    hidden, depth = int(text.get("hidden_size") or 0), int(text.get("num_hidden_layers") or 0)
    vocab = int(text.get("vocab_size") or 0)
    if hidden and cfg.hidden_size != hidden:
        problems.append(f"its hidden_size is {cfg.hidden_size}, the target's {hidden}")
    if depth and cfg.num_target_layers is not None and cfg.num_target_layers != depth:
        problems.append(f"it was trained on a target of {cfg.num_target_layers} layers, this one has {depth}")
    past = [i for i in cfg.target_layer_ids if depth and not 0 <= i < depth]
    if past:
        problems.append(f"it reads target layers {past}, past the target's {depth}")
    if vocab and not 0 <= cfg.mask_token_id < vocab:
        problems.append(f"its mask_token_id {cfg.mask_token_id} is outside the target's vocabulary of {vocab}")
    selector = getattr(cfg, "vocab_size", None)  # DFlash2's candidate selector has codebooks for one vocabulary
    if vocab and selector is not None and selector != vocab:
        problems.append(f"its candidate selector covers {selector} tokens, the target's vocabulary {vocab}")
    return problems


def check_dflash_pair(target: Path, drafter: Path, drafter_name: str | None = None) -> Any:
    """The drafter's DFlashConfig when its files are a DFlash drafter's and its config fits the target's."""
    cfg = check_dflash_files(drafter, drafter_name)
    problems = dflash_target_problems(cfg, read_config(target))
    if problems:
        label = drafter_name or Path(drafter).name
        raise NotDFlashError(f"{label} does not draft for {Path(target).name}: " + "; ".join(problems))
    return cfg
