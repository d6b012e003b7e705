"""`python -m specchat models ...` end to end against the loopback hub and tiny fixture folders."""

import re

import pytest

from specchat.cli import main
from tests.hub.conftest import DRAFT_REPO, TARGET_REPO


def test_download_bundle_prints_progress_on_stderr(hub, hub_config, capsys):
    assert main(["models", "download", TARGET_REPO, "--draft", DRAFT_REPO]) == 0
    out, err = capsys.readouterr()
    paths = out.split()
    assert len(paths) == 2 and all("snapshots" in p for p in paths)
    assert "100%" in err and "[" + "#" * 24 + "]" in err and "ETA" in err
    assert re.search(r"disk: [0-9.]+ KB to download, [0-9.]+ [KMG]B free", err)
    fit = re.search(
        r"memory (green|yellow|red): needs .* target weights ([0-9.]+) KB, "
        r"target cache ([0-9.]+) MB, draft weights ([0-9.]+) KB",
        err,
    )
    assert fit and float(fit.group(2)) > 0 and float(fit.group(3)) > 0  # config.json was read


def test_download_without_disk_space_stops_before_weights(hub, hub_config, monkeypatch, capsys):
    monkeypatch.setattr("specchat.hub.download.free_space", lambda path: 1000)
    assert main(["models", "download", TARGET_REPO]) == 1
    assert "not enough disk space" in capsys.readouterr().err
    assert not [p for m, p, _ in hub.requests if "/resolve/" in p]


def test_list_shows_downloaded_models(hub, hub_config, capsys):
    main(["models", "download", TARGET_REPO])
    capsys.readouterr()
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith(TARGET_REPO))
    assert "dense qwen3" in line and "complete" in line and "vocab " in line


def test_search_offline_says_so_and_lists_the_catalog(hub_env, capsys):
    assert main(["models", "search", "Qwen3-8B"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("offline")
    assert "mlx-community/Qwen3-8B-4bit" in out and "pairs with mlx-community/Qwen3-0.6B-4bit (K=2)" in out


@pytest.mark.parametrize("answer, code, kept", [("n", 1, True), ("y", 0, False)])
def test_delete_asks_first(hub, hub_config, monkeypatch, capsys, answer, code, kept):
    main(["models", "download", TARGET_REPO])
    monkeypatch.setattr("builtins.input", lambda prompt: answer)
    assert main(["models", "delete", TARGET_REPO]) == code
    repo = hub_config.cache_dir / "models--mlx-community--Tiny-Target-4bit"
    assert repo.exists() == kept


def test_pair_prints_report_and_memory(dense_target, dense_draft_partial, dense_other_vocab, hub_env, capsys):
    assert main(["models", "pair", str(dense_target), str(dense_draft_partial)]) == 0
    out = capsys.readouterr().out
    assert "\ncompatible\n" in out
    assert re.search(r"memory (green|yellow|red): needs [0-9.]+ [KMG]B of", out)
    assert main(["models", "pair", str(dense_target), str(dense_other_vocab)]) == 3
    out = capsys.readouterr().out
    assert "INCOMPATIBLE: vocabulary: vocabularies differ" in out


def test_pair_with_an_unknown_name_says_so(hub_env, dense_target, capsys):
    assert main(["models", "pair", str(dense_target), "nobody/nothing"]) == 1
    assert "nobody/nothing is neither a model folder nor a downloaded model" in capsys.readouterr().err
