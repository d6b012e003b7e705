"""Models already on disk: a fake Hugging Face cache, a fake LM Studio folder, the user's folders."""

import json
from pathlib import Path

from specchat.hub.discovery import discover_models, hf_cache_models, lmstudio_dirs


def _model(folder: Path, weights: str = "model.safetensors") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"model_type": "qwen3"}')
    (folder / weights).write_bytes(b"\0" * 8)
    return folder


def _hf_repo(cache: Path, repo_id: str, revisions: list[str], main: str | None, gguf: bool = False) -> Path:
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    for rev in revisions:
        _model(repo / "snapshots" / rev, "model.gguf" if gguf else "model.safetensors")
    if main:
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / "main").write_text(main)
    return repo


def test_the_hf_cache_offers_each_mlx_repo_at_its_current_snapshot(tmp_path):
    cache = tmp_path / "hub"
    repo = _hf_repo(cache, "mlx-community/Qwen3-8B-4bit", ["aaa", "bbb"], main="aaa")
    _hf_repo(cache, "someone/Qwen3-8B-GGUF", ["ccc"], main="ccc", gguf=True)  # not MLX: not offered
    (cache / "datasets--x--y" / "snapshots" / "d").mkdir(parents=True)
    found = hf_cache_models(cache)
    assert [(m.name, m.path, m.source) for m in found] == [
        ("mlx-community/Qwen3-8B-4bit", repo / "snapshots" / "aaa", "hf-cache")
    ]
    assert hf_cache_models(tmp_path / "missing") == []


def test_lm_studio_folders_and_the_users_folders_are_found_once_each(tmp_path):
    home, cache = tmp_path / "home", tmp_path / "hub"
    lms = _model(home / ".lmstudio/models/mlx-community/Qwen3-0.6B-4bit")
    _model(home / ".lmstudio/models/lmstudio-community/Qwen3-8B-GGUF", "model.gguf")
    custom = tmp_path / "big-disk/lms"
    moved = _model(custom / "mlx-community/Qwen3.5-27B-4bit")
    (home / ".lmstudio").mkdir(exist_ok=True)
    (home / ".lmstudio/settings.json").write_text(json.dumps({"downloadsFolder": str(custom)}))
    mine = _model(tmp_path / "my-models/qwen-tuned")
    hf = _hf_repo(cache, "mlx-community/Qwen3-8B-4bit", ["r1"], main=None) / "snapshots" / "r1"
    assert lmstudio_dirs(home) == [home / ".lmstudio/models", custom]
    found = discover_models(cache, [tmp_path / "my-models", custom], home=home)
    assert [(m.path, m.source) for m in found] == [
        (hf, "hf-cache"),
        (lms, "lm-studio"),
        (moved, "lm-studio"),
        (mine, "folder"),
    ]
    assert found[1].name == "mlx-community/Qwen3-0.6B-4bit"
