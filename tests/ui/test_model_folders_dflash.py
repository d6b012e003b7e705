"""The target and draft pickers' folders (ui/model_folders.py) leave DFlash drafter folders out, wherever they
are found: under the folders beside the models in use, in the Hugging Face cache, or in the user's folders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from specchat.ui.model_folders import find_model_folders, local_models
from tests.fixtures.dflash2_models import build_dflash2
from tests.fixtures.dflash_models import build_dflash


@pytest.fixture(scope="module")
def shelf(tmp_path_factory, dense_target, dense_draft_partial) -> Path:
    """A folder holding a target, a draft, a DFlash drafter, a DFlash2 drafter, and a drafter whose DFlash
    fields sit at the top level of its config (no dflash_config section, no DFlash architecture)."""
    root = tmp_path_factory.mktemp("shelf")
    shutil.copytree(dense_target, root / "target")
    shutil.copytree(dense_draft_partial, root / "draft")
    build_dflash(root / "target-DFlash", dense_target)
    build_dflash2(root / "target-DFlash2", dense_target)
    flat = build_dflash(root / "flat-drafter", dense_target, layout="flat")
    config = json.loads((flat / "config.json").read_text())
    config["architectures"] = ["Qwen3ForCausalLM"]
    (flat / "config.json").write_text(json.dumps(config))
    return root


def names(folders) -> set[str]:
    return {Path(folder).name for folder in folders}


def test_the_shelf_holds_what_it_claims(shelf):
    """Without the DFlash check every folder would be offered: each one is a config.json + model.safetensors."""
    for name in ("target", "draft", "target-DFlash", "target-DFlash2", "flat-drafter"):
        assert (shelf / name / "config.json").is_file() and (shelf / name / "model.safetensors").is_file(), name
    flat = json.loads((shelf / "flat-drafter" / "config.json").read_text())
    assert "dflash_config" not in flat and {"block_size", "mask_token_id", "target_layer_ids"} <= set(flat)


def test_folders_beside_the_models_in_use_leave_drafters_out(shelf, tmp_path):
    assert names(find_model_folders([shelf])) == {"target", "draft"}
    found = local_models([shelf], cache_dir=tmp_path / "empty_cache", home=tmp_path / "home")
    assert names(found) == {"target", "draft"}


def test_models_found_on_disk_leave_drafters_out(shelf, tmp_path):
    """The user's folders and the Hugging Face cache (a snapshot per repo) are searched too."""
    cache = tmp_path / "hub"
    for repo, folder in (("z-lab--Qwen3-8B-DFlash-b16", "target-DFlash"), ("org--tiny", "target")):
        snapshot = cache / f"models--{repo}" / "snapshots" / "abc"
        shutil.copytree(shelf / folder, snapshot)
        (cache / f"models--{repo}" / "refs").mkdir()
        (cache / f"models--{repo}" / "refs" / "main").write_text("abc")
    found = local_models([], extra_dirs=[shelf], cache_dir=cache, home=tmp_path / "home")
    assert sorted(found.values()) == ["draft", "org/tiny", "target"]
