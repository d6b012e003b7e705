"""Load mlx-lm model folders; never runs code shipped with a model."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from mlx.utils import tree_flatten

from specchat.upstream.mlx_lm import load_with_config

from .config import LIMITS
from .errors import ConfigError, ModelLoadError
from .json_types import JSONObject, JSONValue
from .model_types import LanguageModel
from .tokenizer import Tokenizer

# tokenizer_config.json alone is not enough: transformers would quietly build a wrong tokenizer
VOCABULARY_FILES = ("tokenizer.json", "vocab.json", "tokenizer.model")


@dataclass
class LoadedModel:
    """A model, its tokenizer, its config and the folder it came from."""

    model: LanguageModel
    tokenizer: Tokenizer
    config: JSONObject
    path: Path

    @property
    def name(self) -> str:
        """The folder name, used in messages."""
        return self.path.name


def read_config(path: Path) -> JSONObject:
    """Read config.json of a model folder, with a message that names the file on failure."""
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ModelLoadError(f"{path} is not a model folder: {config_file.name} is missing")
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"cannot read {config_file}: {exc}") from exc
    if not isinstance(config, dict):
        raise ModelLoadError(f"{config_file} does not hold a JSON object")
    return cast(JSONObject, config)


def missing_tokenizer(folder: Path) -> str | None:
    """None when the folder has a vocabulary file, else a line saying which files it lacks."""
    if any((Path(folder) / name).is_file() for name in VOCABULARY_FILES):
        return None
    return f"tokenizer files ({', '.join(VOCABULARY_FILES[:-1])} or {VOCABULARY_FILES[-1]})"


def load_model(path: str | Path) -> LoadedModel:
    """Load weights and tokenizer from a local folder (no downloads, no remote code)."""
    path = Path(path).expanduser().resolve()
    if not path.is_dir():
        raise ModelLoadError(f"model folder not found: {path}")
    read_config(path)
    if not any(path.glob("model*.safetensors")):
        raise ModelLoadError(f"{path} has no model*.safetensors weights")
    if missing := missing_tokenizer(path):
        raise ModelLoadError(f"{path} has no {missing}")
    try:
        model, tokenizer, config = load_with_config(str(path))
    except Exception as exc:  # mlx-lm raises ValueError/KeyError/OSError for bad folders
        raise ModelLoadError(f"cannot load {path}: {type(exc).__name__}: {exc}") from exc
    # the boundary: mlx-lm's model and TokenizerWrapper are untyped; the engine uses them as these Protocols say
    return LoadedModel(cast(LanguageModel, model), cast(Tokenizer, tokenizer), config, path)


def vocab_size(loaded: LoadedModel) -> int:
    """The size of the model's output layer (may exceed the tokenizer's vocabulary)."""
    text = loaded.config.get("text_config")
    section = text if isinstance(text, dict) else loaded.config
    size = section.get("vocab_size") or loaded.config.get("vocab_size")
    return int(size) if isinstance(size, int | float | str) else len(loaded.tokenizer.get_vocab())


def context_limit(config: Mapping[str, JSONValue]) -> tuple[int, str] | None:
    """The model's context length and where it came from (max_position_embeddings, at the top of
    config.json or under text_config); None when the config gives none."""
    for where, section in (
        ("max_position_embeddings", config),
        ("text_config.max_position_embeddings", config.get("text_config")),
    ):
        value = section.get("max_position_embeddings") if isinstance(section, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, where
    return None


SETTING_SOURCE = "your context length setting"


def context_window(config: Mapping[str, JSONValue], cap: int | None) -> tuple[int, str] | None:
    """The tokens a prompt and its reply may fill, and where that number comes from: the user's cap where it is
    below the model's limit, else the model's limit ('max_position_embeddings in config.json'); None when neither
    is known."""
    fitted = fitted_context_length(cap, config)
    if fitted is not None:
        return fitted, SETTING_SOURCE
    limit = context_limit(config)
    return (limit[0], f"{limit[1]} in config.json") if limit is not None else None


def checked_context_length(cap: int | None, config: Mapping[str, JSONValue], name: str) -> int | None:
    """The cap, when it is in range and the model holds at least that many tokens; ConfigError naming both
    numbers otherwise (None: the model's own limit)."""
    if cap is None:
        return None
    LIMITS["context_length"].check(cap)
    limit = context_limit(config)
    if limit is not None and cap > limit[0]:
        raise ConfigError(
            f"context length {cap} is more than {name} holds: at most {limit[0]} ({limit[1]} in config.json)"
        )
    return cap


def fitted_context_length(cap: int | None, config: Mapping[str, JSONValue]) -> int | None:
    """A setting kept across models, for this one: the cap where the model holds more, else None (its own)."""
    limit = context_limit(config)
    return cap if cap is not None and (limit is None or cap < limit[0]) else None


def weight_bytes(loaded: LoadedModel) -> int:
    """The bytes of the model's weights: what one plain decoding step reads."""
    flat = tree_flatten(loaded.model.parameters())  # a list of (name, array) pairs for a module's parameters
    return sum(int(pair[1].nbytes) for pair in flat if isinstance(pair, tuple))
