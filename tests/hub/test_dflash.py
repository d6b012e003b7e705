"""DFlash drafters in the model manager: download with the target, the file checks, the list, the memory fit."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from specchat.cli import main
from specchat.hub.dflash import NotDFlashError, check_dflash_files, check_dflash_pair, is_dflash_folder
from specchat.hub.memory_fit import memory_fit, model_memory
from specchat.hub.model_facts import read_config
from specchat.hub.store import describe_folder, scan_local_models
from specchat.system.memory import MachineMemory
from tests.fixtures.dflash2_models import build_dflash2
from tests.fixtures.dflash_models import build_dflash
from tests.hub.conftest import DFLASH_REPO, DRAFT_REPO, TARGET_REPO, point_hub_at
from tests.hub.hub_server import FakeRepo, HubServer

ROOMY = MachineMemory(10**12, 10**12, None, "test")
WRONG_REPO = "z-lab/Tiny-Other-DFlash"  # a DFlash drafter trained for a target of another depth


@pytest.fixture
def wrong_drafter(tmp_path, dense_target):
    return build_dflash(
        tmp_path / "wrong", dense_target, edit=lambda config, weights: config.update(num_target_layers=9)
    )


@pytest.fixture
def hub(hub_env, monkeypatch, target_repo, draft_repo, dflash_repo, wrong_drafter):
    """The loopback hub with the tiny target, its draft, its DFlash drafter and a drafter for another target."""
    repos = [target_repo, draft_repo, dflash_repo, FakeRepo.from_folder(WRONG_REPO, wrong_drafter)]
    with HubServer(repos) as server:
        point_hub_at(monkeypatch, server.url)
        yield server


def test_download_fetches_the_target_and_its_dflash_drafter(hub, dflash_repo, dflash_drafter, capsys):
    assert main(["models", "download", TARGET_REPO, "--dflash", DFLASH_REPO]) == 0
    out, err = capsys.readouterr()
    target, drafter = (p for p in out.split())
    assert "models--mlx-community--Tiny-Target-4bit/snapshots" in target
    assert f"models--z-lab--Tiny-Target-DFlash-b16/snapshots/{dflash_repo.commit}" in drafter
    on_disk = {p.name: p.read_bytes() for p in Path(drafter).iterdir()}
    assert on_disk == dflash_repo.files
    weights = (dflash_drafter / "model.safetensors").stat().st_size
    fit = re.search(r"dflash weights ([0-9.]+) KB, dflash cache ([0-9.]+) (KB|MB)", err)
    assert fit and abs(float(fit.group(1)) * 1000 - weights) < 100  # the drafter's bytes are in the fit
    assert float(fit.group(2)) > 0  # its context cache too


def test_models_list_shows_a_downloaded_drafter_complete_without_a_tokenizer(hub, capsys):
    assert main(["models", "download", TARGET_REPO, "--dflash", DFLASH_REPO]) == 0
    capsys.readouterr()
    assert main(["models", "list", "--no-vocab"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "DFL" in lines[DFLASH_REPO] and lines[DFLASH_REPO].rstrip().endswith("complete")
    assert "DFL" not in lines[TARGET_REPO] and lines[TARGET_REPO].rstrip().endswith("complete")


def test_a_repo_that_is_not_a_dflash_drafter_is_refused_after_download(hub, capsys):
    assert main(["models", "download", TARGET_REPO, "--dflash", DRAFT_REPO]) == 1
    err = capsys.readouterr().err
    assert f"error: {DRAFT_REPO} is not a DFlash drafter" in err and "the files are kept at" in err


def test_a_drafter_for_another_target_is_refused_naming_why(hub, capsys):
    assert main(["models", "download", TARGET_REPO, "--dflash", WRONG_REPO]) == 1
    err = capsys.readouterr().err
    assert f"{WRONG_REPO} does not draft for" in err and "trained on a target of 9 layers" in err


def test_the_file_checks_are_the_engines(dense_target, dflash_drafter, tmp_path):
    cfg = check_dflash_files(dflash_drafter)
    assert cfg.block_size == 16 and cfg.target_layer_ids == (0, 1)
    assert check_dflash_pair(dense_target, dflash_drafter) == cfg
    with pytest.raises(NotDFlashError, match="is not a DFlash drafter: its config.json has no dflash_config"):
        check_dflash_files(dense_target)
    headed = shutil.copytree(dflash_drafter, tmp_path / "headed")
    build_dflash(
        headed, dense_target, edit=lambda config, weights: weights.update({"lm_head.weight": weights["fc.weight"]})
    )
    with pytest.raises(NotDFlashError, match="uses the target's embeddings and lm_head"):
        check_dflash_files(headed)
    top_level = build_dflash(tmp_path / "top", dense_target, layout="top", prefix="model.")
    assert is_dflash_folder(top_level) and check_dflash_files(top_level).block_size == 16


def test_a_drafter_folder_is_complete_and_not_a_model_to_chat_with(dflash_drafter, dense_target, hub_config):
    drafter = describe_folder(dflash_drafter)
    assert drafter.complete and drafter.missing == () and drafter.dflash
    assert drafter.mtp_available is False and drafter.vocab_hash is None
    assert not describe_folder(dense_target).dflash
    models = {m.name: m for m in scan_local_models(hub_config, [dflash_drafter.parent])}
    assert models[dflash_drafter.name].dflash and not models[dense_target.name].dflash


def test_memory_fit_counts_the_drafters_weights_and_cache(dense_target, dense_draft_partial, dflash_drafter):
    target, draft, drafter = model_memory(dense_target), model_memory(dense_draft_partial), model_memory(dflash_drafter)
    alone = memory_fit(target, draft, 4096, ROOMY)
    fit = memory_fit(target, draft, 4096, ROOMY, dflash=drafter)
    parts = dict(fit.parts)
    weights = (dflash_drafter / "model.safetensors").stat().st_size
    config = read_config(dflash_drafter)
    per_token = config["num_hidden_layers"] * 2 * config["num_key_value_heads"] * config["head_dim"] * 2
    assert parts["dflash weights"] == weights and parts["dflash cache"] == 4096 * per_token
    assert fit.needed_bytes == sum(parts.values())
    added = fit.needed_bytes - alone.needed_bytes  # its weights, cache, and its share of the runtime
    assert abs(added - (weights + 4096 * per_token + 0.1 * weights)) <= 1


def test_pair_checks_a_dflash_drafter_against_the_target_and_fits_it(
    dense_target, hybrid_target, dflash_drafter, hub_env, capsys
):
    assert main(["models", "pair", str(dense_target), str(dflash_drafter)]) == 0
    out = capsys.readouterr().out
    assert "compatible: a DFlash drafter of block size 16 reading target layers (0, 1)" in out
    assert re.search(r"memory (green|yellow|red): .*target weights .* dflash weights [0-9.]+ KB, dflash cache", out)
    assert main(["models", "pair", str(hybrid_target), str(dflash_drafter)]) == 3
    assert (
        "INCOMPATIBLE: " in (out := capsys.readouterr().out)
        and "trained on a target of 2 layers, this one has 4" in out
    )


def test_a_dflash2_drafter_passes_the_same_checks(dense_target, tmp_path):
    drafter = build_dflash2(tmp_path / "dflash2", dense_target)
    assert is_dflash_folder(drafter) and describe_folder(drafter).complete
    assert check_dflash_pair(dense_target, drafter).block_size == 16
