"""Tests for specchat.paths and specchat.settings: folders, validated load, backups, atomic save."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from specchat.paths import AppPaths
from specchat.settings import LoadedSettings, Settings, load_settings, save_settings, settings_from_dict
from specchat.settings_checks import SettingsError

FIXED_NOW = datetime(2025, 3, 4, 5, 6, 7)
BACKUP_NAME = "settings.json.corrupt-20250304-050607"


@pytest.fixture
def paths(tmp_path: Path) -> AppPaths:
    return AppPaths.under(tmp_path).ensure()


def load(paths: AppPaths) -> LoadedSettings:
    return load_settings(paths, now=lambda: FIXED_NOW)


def write_settings(paths: AppPaths, data: object) -> bytes:
    raw = json.dumps(data).encode()
    paths.settings_file.write_bytes(raw)
    return raw


# --- paths ---


def test_under_puts_every_folder_inside_root_and_ensure_creates_them(tmp_path: Path) -> None:
    paths = AppPaths.under(tmp_path / "home")
    folders = [paths.config_dir, paths.data_dir, paths.cache_dir, paths.log_dir]
    assert len(set(folders)) == 4
    assert not any(folder.exists() for folder in folders)
    paths.ensure()
    assert all(folder.is_dir() and folder.parent == tmp_path / "home" for folder in folders)


def test_well_known_files(tmp_path: Path) -> None:
    paths = AppPaths.under(tmp_path)
    assert paths.settings_file == paths.config_dir / "settings.json"
    assert paths.conversations_db == paths.data_dir / "conversations.sqlite3"
    assert paths.tuning_file == paths.data_dir / "tuned_k.json"


def test_specchat_home_overrides_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECCHAT_HOME", str(tmp_path))
    assert AppPaths.default() == AppPaths.under(tmp_path)


def test_default_without_env_uses_platformdirs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPECCHAT_HOME", raising=False)
    paths = AppPaths.default()  # computes paths only; nothing is created
    assert "SpecChat" in str(paths.config_dir)
    assert paths.config_dir != paths.cache_dir


# --- load ---


def test_missing_file_gives_defaults_without_warning(paths: AppPaths) -> None:
    loaded = load(paths)
    assert loaded.settings == Settings()
    assert loaded.warning is None


def test_round_trip_keeps_every_field(paths: AppPaths) -> None:
    settings = Settings(
        target_path="/models/Qwen3-8B-4bit",
        draft_path="/models/Qwen3-0.6B-4bit",
        mode="draft",
        num_draft_tokens=7,
        temperature=0.7,
        top_p=0.9,
        top_k=20,
        min_p=0.05,
        max_tokens=2048,
        enable_thinking=True,
        color_draft_tokens=False,
        extra_model_dirs=["/Volumes/models", "/tmp/m"],
        window_geometry="AdnQywADAAA=",
    )
    save_settings(paths, settings)
    loaded = load(paths)
    assert loaded.warning is None
    assert loaded.settings == settings


def test_saved_file_is_pretty_json_with_schema_version(paths: AppPaths) -> None:
    save_settings(paths, Settings(mode="mtp"))
    text = paths.settings_file.read_text()
    assert text.startswith("{\n  ")
    data = json.loads(text)
    assert data["schema_version"] == 1 and data["mode"] == "mtp"
    leftovers = [p.name for p in paths.config_dir.iterdir() if p.name != "settings.json"]
    assert leftovers == []  # no temp files left behind


def test_save_replaces_existing_file_and_creates_missing_folder(tmp_path: Path) -> None:
    paths = AppPaths.under(tmp_path)  # config folder does not exist yet
    save_settings(paths, Settings(max_tokens=10))
    save_settings(paths, Settings(max_tokens=20))
    assert load(paths).settings.max_tokens == 20


def test_save_refuses_invalid_settings(paths: AppPaths) -> None:
    with pytest.raises(SettingsError):
        save_settings(paths, Settings(num_draft_tokens=0))
    assert not paths.settings_file.exists()


def test_corrupt_json_is_backed_up_and_defaults_loaded(paths: AppPaths) -> None:
    old_bytes = b'{"mode": "draft", '
    paths.settings_file.write_bytes(old_bytes)
    loaded = load(paths)
    backup = paths.config_dir / BACKUP_NAME
    assert backup.read_bytes() == old_bytes
    assert not paths.settings_file.exists()
    assert loaded.settings == Settings()
    assert loaded.warning is not None
    assert str(backup) in loaded.warning
    assert "JSON" in loaded.warning


def test_non_utf8_file_is_backed_up(paths: AppPaths) -> None:
    paths.settings_file.write_bytes(b"\xff\xfe\x00garbage")
    loaded = load(paths)
    assert (paths.config_dir / BACKUP_NAME).read_bytes() == b"\xff\xfe\x00garbage"
    assert loaded.settings == Settings()


@pytest.mark.parametrize(
    ("field", "bad_value"),
    [
        ("mode", "turbo"),
        ("num_draft_tokens", 0),
        ("num_draft_tokens", 17),
        ("num_draft_tokens", 4.5),
        ("num_draft_tokens", True),
        ("temperature", -0.1),
        ("temperature", "hot"),
        ("top_p", 0),
        ("top_p", 1.5),
        ("top_k", -1),
        ("min_p", 2),
        ("max_tokens", 0),
        ("enable_thinking", "yes"),
        ("color_draft_tokens", 1),
        ("extra_model_dirs", "/models"),
        ("extra_model_dirs", ["/ok", 3]),
        ("target_path", 42),
        ("window_geometry", "not base64!!"),
    ],
)
def test_a_wrong_field_is_reset_alone_named_and_the_file_backed_up(
    paths: AppPaths, field: str, bad_value: object
) -> None:
    old_bytes = write_settings(paths, {"schema_version": 1, "max_tokens": 99, "theme": "dark", field: bad_value})
    loaded = load(paths)
    assert (paths.config_dir / BACKUP_NAME).read_bytes() == old_bytes
    kept = {"max_tokens": 99, "theme": "dark"}
    kept.pop(field, None)
    assert loaded.settings == Settings(**kept)
    assert loaded.warning is not None and field in loaded.warning and "every other setting is kept" in loaded.warning
    assert str(paths.config_dir / BACKUP_NAME) in loaded.warning
    assert load(paths).warning is None  # the file was rewritten with the kept values: said once


def test_two_wrong_fields_are_both_named(paths: AppPaths) -> None:
    write_settings(paths, {"temperature": "hot", "top_p": 7, "mode": "draft"})
    loaded = load(paths)
    assert loaded.settings == Settings(mode="draft")
    assert "temperature" in loaded.warning and "top_p" in loaded.warning and "Those settings are" in loaded.warning


def test_newer_schema_is_backed_up_with_warning(paths: AppPaths) -> None:
    write_settings(paths, {"schema_version": 2, "mode": "draft"})
    loaded = load(paths)
    assert loaded.settings == Settings()
    assert (paths.config_dir / BACKUP_NAME).exists()
    assert "schema_version" in loaded.warning and "newer" in loaded.warning


def test_top_level_not_an_object_is_corrupt(paths: AppPaths) -> None:
    write_settings(paths, ["mode", "draft"])
    loaded = load(paths)
    assert loaded.settings == Settings()
    assert (paths.config_dir / BACKUP_NAME).exists()


def test_unknown_keys_ignored_and_missing_keys_defaulted(paths: AppPaths) -> None:
    write_settings(paths, {"mode": "draft", "temperature": 1, "from_the_future": {"x": 1}})
    loaded = load(paths)
    assert loaded.warning is None
    assert loaded.settings == Settings(mode="draft", temperature=1.0)
    assert isinstance(loaded.settings.temperature, float)
    assert paths.settings_file.exists()  # a good file is left alone


def test_second_backup_in_same_second_does_not_overwrite_first(paths: AppPaths) -> None:
    paths.settings_file.write_bytes(b"first")
    load(paths)
    paths.settings_file.write_bytes(b"second")
    loaded = load(paths)
    first = paths.config_dir / BACKUP_NAME
    second = paths.config_dir / f"{BACKUP_NAME}-1"
    assert first.read_bytes() == b"first"
    assert second.read_bytes() == b"second"
    assert str(second) in loaded.warning


def test_settings_from_dict_accepts_boundaries() -> None:
    settings = settings_from_dict({"num_draft_tokens": 16, "top_p": 1, "min_p": 0})
    assert settings.num_draft_tokens == 16 and settings.top_p == 1.0
    assert settings_from_dict({"num_draft_tokens": 1}).num_draft_tokens == 1


def test_a_folder_is_writable_only_when_a_file_can_really_be_made_in_it(tmp_path):
    from specchat.paths import is_writable

    assert is_writable(tmp_path / "new" / "folder") and (tmp_path / "new" / "folder").is_dir()
    blocker = tmp_path / "data"
    blocker.write_text("a file where the data folder should be")
    assert not is_writable(blocker) and not is_writable(blocker / "inside")
    assert list(tmp_path.glob("new/folder/*")) == []  # the probe cleans up after itself


def test_ensure_skips_folders_it_cannot_make_and_unwritable_names_them(tmp_path):
    paths = AppPaths.under(tmp_path)
    paths.data_dir.write_text("not a folder")
    assert paths.ensure() is paths  # no exception
    assert paths.config_dir.is_dir() and paths.log_dir.is_dir()
    assert paths.unwritable() == [paths.data_dir]
