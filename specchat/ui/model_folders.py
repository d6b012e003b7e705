"""Find local model folders (config.json + safetensors) to offer in the pickers. Plain Python.

Besides folders next to the models already used, the pickers offer every model found on disk
(specchat.hub.discovery): the Hugging Face cache, LM Studio's folders and the folders the user added.
DFlash drafter folders are not offered: they are neither a target nor a draft model (no embeddings, no
lm_head, no tokenizer); they are picked as a drafter elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from specchat.hub.config import HubConfig
from specchat.hub.dflash import is_dflash_folder
from specchat.hub.discovery import discover_models


def is_model_folder(path: Path) -> bool:
    """True for a folder with config.json and model*.safetensors."""
    return path.is_dir() and (path / "config.json").is_file() and any(path.glob("model*.safetensors"))


def find_model_folders(roots: Iterable[str | Path], depth: int = 2) -> list[str]:
    """Model folders at or under each root (to `depth` levels), each once, in a stable order."""
    found: dict[str, None] = {}
    for root in roots:
        _walk(Path(root).expanduser(), depth, found)
    return list(found)


def local_models(
    roots: Iterable[str | Path],
    extra_dirs: Iterable[str | Path] = (),
    cache_dir: Path | None = None,
    home: Path | None = None,
) -> dict[str, str]:
    """{folder: name to show}: folders at or under roots, then every model discovered on disk."""
    models = {folder: Path(folder).name for folder in find_model_folders(roots)}
    cache = cache_dir if cache_dir is not None else HubConfig.from_env().cache_dir
    for model in discover_models(cache, extra_dirs, home):
        if not is_dflash_folder(model.path):
            models.setdefault(str(model.path.resolve()), model.name)
    return models


def _walk(path: Path, depth: int, found: dict[str, None]) -> None:
    try:
        if is_model_folder(path):
            if not is_dflash_folder(path):
                found[str(path.resolve())] = None
            return
        if depth > 0 and path.is_dir():
            for child in sorted(path.iterdir()):
                if child.is_dir() and not child.name.startswith("."):
                    _walk(child, depth - 1, found)
    except OSError:
        return  # unreadable folders are simply not offered
