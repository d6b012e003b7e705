"""Models already on disk: MLX-format repos in the Hugging Face cache and in LM Studio's model
folders, plus folders the user added. Plain file reads: nothing is downloaded or imported."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# LM Studio keeps models as <publisher>/<model>/ under one of these (newer versions: ~/.lmstudio)
LMSTUDIO_MODEL_DIRS = (".lmstudio/models", ".cache/lm-studio/models")
LMSTUDIO_SETTINGS = (".lmstudio/settings.json", ".cache/lm-studio/settings.json")


@dataclass(frozen=True)
class FoundModel:
    """A loadable MLX model folder and where it was found ('hf-cache', 'lm-studio' or 'folder')."""

    path: Path
    name: str
    source: str


def is_mlx_folder(path: Path) -> bool:
    """True for a folder mlx-lm can load: config.json and safetensors weights (not GGUF alone)."""
    try:
        return path.is_dir() and (path / "config.json").is_file() and any(path.glob("*.safetensors"))
    except OSError:
        return False


def hf_cache_models(cache_dir: Path) -> list[FoundModel]:
    """Each cached repo's current snapshot (refs/main, else the newest) that is an MLX model."""
    found = []
    for repo in _children(cache_dir, "models--*"):
        snapshot = _current_snapshot(repo)
        if snapshot is not None and is_mlx_folder(snapshot):
            found.append(FoundModel(snapshot, repo.name[len("models--") :].replace("--", "/"), "hf-cache"))
    return found


def lmstudio_dirs(home: Path) -> list[Path]:
    """LM Studio's model folders on this machine: the defaults and a downloadsFolder from its settings."""
    dirs = [home / d for d in LMSTUDIO_MODEL_DIRS]
    for name in LMSTUDIO_SETTINGS:
        try:
            folder = json.loads((home / name).read_text(encoding="utf-8")).get("downloadsFolder")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(folder, str) and folder:
            dirs.append(Path(folder).expanduser())
    return _unique(d for d in dirs if d.is_dir())


def folder_models(roots: Iterable[Path], source: str, depth: int = 2) -> list[FoundModel]:
    """MLX model folders at or under each root, `depth` levels down (publisher/model)."""
    found: list[FoundModel] = []
    for root in roots:
        _walk(Path(root).expanduser(), Path(root).expanduser(), depth, source, found)
    return found


def discover_models(
    cache_dir: Path, extra_dirs: Iterable[str | Path] = (), home: Path | None = None
) -> list[FoundModel]:
    """Every model found on disk, each folder once: the HF cache, LM Studio, then the user's folders."""
    home = home if home is not None else Path.home()
    return unique_by_path(
        hf_cache_models(Path(cache_dir))
        + folder_models(lmstudio_dirs(home), "lm-studio")
        + folder_models([Path(d) for d in extra_dirs], "folder")
    )


def unique_by_path(models: list) -> list:
    """Each model (anything with a .path) once, the first of those whose folder resolves the same."""
    seen: set[Path] = set()
    unique = []
    for model in models:
        key = model.path.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(model)
    return unique


def _walk(root: Path, path: Path, depth: int, source: str, found: list[FoundModel]) -> None:
    if is_mlx_folder(path):
        found.append(FoundModel(path, str(path.relative_to(root)) if path != root else path.name, source))
        return
    if depth > 0:
        for child in _children(path, "*"):
            _walk(root, child, depth - 1, source, found)


def _current_snapshot(repo: Path) -> Path | None:
    try:
        ref = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
    except OSError:
        ref = ""
    if ref and (repo / "snapshots" / ref).is_dir():
        return repo / "snapshots" / ref
    snapshots = _children(repo / "snapshots", "*")
    return max(snapshots, key=lambda p: p.stat().st_mtime, default=None)


def _children(folder: Path, pattern: str) -> list[Path]:
    """Sub-folders (not hidden) in name order; none when the folder is missing or unreadable."""
    try:
        return sorted(p for p in folder.glob(pattern) if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def _unique(paths: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        if path.resolve() not in [p.resolve() for p in out]:
            out.append(path)
    return out
