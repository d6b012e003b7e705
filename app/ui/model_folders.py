"""Find local model folders (config.json + safetensors) to offer in the pickers. Plain Python."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def is_model_folder(path: Path) -> bool:
    """True for a folder with config.json and model*.safetensors."""
    return path.is_dir() and (path / "config.json").is_file() and any(path.glob("model*.safetensors"))


def find_model_folders(roots: Iterable[str | Path], depth: int = 2) -> list[str]:
    """Model folders at or under each root (to `depth` levels), each once, in a stable order."""
    found: dict[str, None] = {}
    for root in roots:
        _walk(Path(root).expanduser(), depth, found)
    return list(found)


def _walk(path: Path, depth: int, found: dict[str, None]) -> None:
    try:
        if is_model_folder(path):
            found[str(path.resolve())] = None
            return
        if depth > 0 and path.is_dir():
            for child in sorted(path.iterdir()):
                if child.is_dir() and not child.name.startswith("."):
                    _walk(child, depth - 1, found)
    except OSError:
        return  # unreadable folders are simply not offered
