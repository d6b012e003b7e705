"""`python -m specchat models add DIR` and LM Studio's models in the local list."""

import json
import shutil
from pathlib import Path

from specchat.cli import main
from specchat.hub.config import HubConfig
from specchat.hub.store import scan_local_models
from specchat.paths import AppPaths
from specchat.settings import load_settings


def _model(folder: Path, weights: str = "model.safetensors") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"model_type": "qwen3"}')
    (folder / weights).write_bytes(b"\0" * 8)
    return folder


def _saved_dirs() -> list[str]:
    return load_settings(AppPaths.default()).settings.extra_model_dirs


def test_add_remembers_a_model_folder_once(tmp_path, capsys):
    model = _model(tmp_path / "Qwen3-0.6B-4bit")
    assert main(["models", "add", str(model)]) == 0
    assert capsys.readouterr().out.strip() == f"added {model.resolve()} (1 model: Qwen3-0.6B-4bit)"
    assert _saved_dirs() == [str(model.resolve())]
    assert main(["models", "add", str(model)]) == 0
    assert "already listed" in capsys.readouterr().out
    assert _saved_dirs() == [str(model.resolve())]


def test_add_takes_a_folder_of_model_folders(tmp_path, capsys):
    _model(tmp_path / "models" / "mlx-community" / "Qwen3-0.6B-4bit")
    _model(tmp_path / "models" / "Qwen3-8B-4bit")
    assert main(["models", "add", str(tmp_path / "models")]) == 0
    out = capsys.readouterr().out
    assert "2 models" in out and "mlx-community/Qwen3-0.6B-4bit" in out and "Qwen3-8B-4bit" in out


def test_add_refuses_what_is_not_an_mlx_model_folder_in_one_line(tmp_path, capsys):
    gguf = _model(tmp_path / "Qwen3-8B-GGUF", "model.gguf")
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    cases = [
        (tmp_path / "missing", "does not exist"),
        (gguf, "is not an MLX model folder"),
        (a_file, "is a file, not a folder"),
    ]
    for folder, words in cases:
        assert main(["models", "add", str(folder)]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ") and words in err and err.count("\n") == 1, err
    assert _saved_dirs() == []


def test_the_local_list_has_lm_studio_models_once(tmp_path):
    home = tmp_path / "home"
    studio = _model(home / ".lmstudio/models/mlx-community/Qwen3-0.6B-4bit")
    _model(home / ".lmstudio/models/lmstudio-community/Qwen3-8B-GGUF", "model.gguf")
    elsewhere = tmp_path / "downloads"
    (home / ".lmstudio").mkdir(parents=True, exist_ok=True)
    (home / ".lmstudio/settings.json").write_text(json.dumps({"downloadsFolder": str(elsewhere)}))
    moved = _model(elsewhere / "someone" / "Qwen3-1.7B-4bit")
    config = HubConfig(endpoint="http://127.0.0.1:9", cache_dir=tmp_path / "empty-cache")
    models = scan_local_models(config, [str(home / ".lmstudio/models")], home=home)  # also added by hand
    assert [(m.name, m.path, m.source) for m in models] == [
        ("mlx-community/Qwen3-0.6B-4bit", studio, "lm-studio"),
        ("someone/Qwen3-1.7B-4bit", moved, "lm-studio"),
    ]


def test_add_and_list_count_the_same_models_of_a_folder(
    hub_env, dense_target, hybrid_target, tmp_path, monkeypatch, capsys
):
    """Issue 40: a model one level deeper (publisher/model) was counted by add but not listed."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no LM Studio folders of this machine
    root = tmp_path / "models"
    shutil.copytree(dense_target, root / "Qwen" / "Tiny-Dense")
    shutil.copytree(hybrid_target, root / "Tiny-Hybrid")
    (root / "notes").mkdir()  # neither a model nor a folder of models
    assert main(["models", "add", str(root)]) == 0
    added = capsys.readouterr().out
    assert "(2 models: Qwen/Tiny-Dense, Tiny-Hybrid)" in added
    assert main(["models", "list", "--no-vocab"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == ["Qwen/Tiny-Dense", "Tiny-Hybrid"]
