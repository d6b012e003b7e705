"""`python -m specchat models ...` with bad input: one line on stderr that names the problem, no traceback."""

import shutil

import pytest

from specchat.cli import main
from specchat.hub.repo_ids import BadRepoIdError, parse_repo_id
from specchat.paths import AppPaths
from specchat.settings import Settings, save_settings
from tests.hub.conftest import TARGET_REPO
from tests.hub.hub_server import FakeRepo, HubServer


def one_error_line(err: str) -> str:
    """The single stderr line, which must be an error (not a traceback)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def files_under(folder):
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


# --- repo ids -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "https://huggingface.co/mlx-community/Qwen3-8B-4bit",
        "https://huggingface.co/mlx-community/Qwen3-8B-4bit/",
        "https://huggingface.co/mlx-community/Qwen3-8B-4bit/tree/main",
        "https://huggingface.co/mlx-community/Qwen3-8B-4bit/blob/main/config.json",
        "https://hf.co/mlx-community/Qwen3-8B-4bit/resolve/main/model.safetensors?download=true",
        "  mlx-community/Qwen3-8B-4bit ",
    ],
)
def test_pasted_urls_and_ids_give_the_repo_id(text):
    assert parse_repo_id(text) == "mlx-community/Qwen3-8B-4bit"


@pytest.mark.parametrize(
    "text, problem",
    [
        ("a/b/c", "'a/b/c' is not a model id: it has 3 parts separated by '/'"),
        ("mlx-community/Qwen3 8B", "'mlx-community/Qwen3 8B' is not a model id: it contains spaces"),
        ("org/..", "'org/..' is not a model id: '..' and '--' are not allowed"),
        ("https://huggingface.co/datasets/org/data", "points at a dataset, not a model"),
        ("https://example.com/org/name", "'https://example.com/org/name' is not a Hugging Face model URL"),
        ("https://huggingface.co/org/name/extra", "after org/name it has 'extra'"),
        ("https://huggingface.co/", "'https://huggingface.co/' names no model"),
    ],
)
def test_bad_ids_are_refused_by_name(text, problem):
    with pytest.raises(BadRepoIdError) as err:
        parse_repo_id(text)
    assert problem in str(err.value)


def test_download_accepts_a_pasted_url(hub, hub_config, capsys):
    url = f"https://huggingface.co/{TARGET_REPO}/tree/main"
    assert main(["models", "download", url]) == 0
    (path,) = capsys.readouterr().out.split()
    assert f"models--{TARGET_REPO.replace('/', '--')}" in path


def test_download_accepts_a_url_on_the_configured_endpoint(hub, hub_config, capsys):
    assert main(["models", "download", f"{hub.url}/{TARGET_REPO}/blob/main/config.json"]) == 0
    assert "snapshots" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, named",
    [
        (["a/b/c"], "'a/b/c'"),
        (["mlx-community/Qwen3 8B"], "'mlx-community/Qwen3 8B'"),
        ([TARGET_REPO, "--draft", "x/y/z"], "'x/y/z'"),
        ([TARGET_REPO, "--context", "0"], "--context must be at least 1 token, got 0"),
    ],
)
def test_download_refuses_bad_ids_before_asking_the_hub(hub, hub_config, capsys, args, named):
    assert main(["models", "download", *args]) == 2
    assert named in one_error_line(capsys.readouterr().err)
    assert hub.requests == [] and files_under(hub_config.cache_dir) == []


def test_a_repo_listing_a_path_outside_its_folder_is_refused_by_name(hub_env, monkeypatch, capsys, dense_target):
    from tests.hub.conftest import point_hub_at

    evil = FakeRepo.from_folder("evil/Escaping-4bit", dense_target)
    evil.files["../../outside.txt"] = b"written outside the repo folder"
    with HubServer([evil]) as server:
        point_hub_at(monkeypatch, server.url)
        code = main(["models", "download", "evil/Escaping-4bit"])
    line = one_error_line(capsys.readouterr().err)
    assert code == 1
    assert "evil/Escaping-4bit is refused: its file list names '../../outside.txt'" in line
    assert files_under(hub_env) == [] and files_under(hub_env.parent) == []
    assert not [p for m, p, _ in server.requests if "/resolve/" in p]


# --- search ---------------------------------------------------------------------------------


def test_search_refuses_a_negative_limit(hub_env, capsys):
    assert main(["models", "search", "qwen", "--limit", "-1"]) == 2
    assert one_error_line(capsys.readouterr().err) == "error: --limit must be at least 1, got -1"


def test_offline_search_says_offline_once(hub_env, capsys):
    assert main(["models", "search", "qwen3"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("offline: cannot reach http://127.0.0.1:") and "offline: offline" not in first


def test_offline_mode_is_named(hub_env, monkeypatch, capsys):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert main(["models", "search", "qwen3"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("offline: HF_HUB_OFFLINE is set, so http://127.0.0.1:")


def test_a_search_without_hits_says_so(hub, hub_config, capsys):
    assert main(["models", "search", "xyz"]) == 0
    assert capsys.readouterr().out.splitlines() == ["online", "no models match 'xyz'"]


# --- local models ---------------------------------------------------------------------------


def test_list_names_a_truncated_download(hub, hub_config, capsys):
    assert main(["models", "download", TARGET_REPO]) == 0
    snapshot = next(hub_config.cache_dir.glob("models--*/snapshots/*"))
    blob = (snapshot / "model.safetensors").resolve()
    blob.write_bytes(blob.read_bytes()[:-5000])
    capsys.readouterr()
    assert main(["models", "list", "--no-vocab"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(TARGET_REPO))
    assert "PARTIAL (model.safetensors is truncated: 5.0 KB missing" in line and "complete" not in line


def test_list_and_pair_name_a_truncated_folder(hub_env, dense_target, dense_draft_partial, tmp_path, capsys):
    draft = tmp_path / "folders" / "cut-draft"
    shutil.copytree(dense_draft_partial, draft)
    (draft / "model.safetensors").write_bytes((draft / "model.safetensors").read_bytes()[:-300])
    save_settings(AppPaths.default(), Settings(extra_model_dirs=[str(draft.parent)]))
    assert main(["models", "list"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("cut-draft"))
    assert "PARTIAL (model.safetensors is truncated: 300 B missing" in line
    assert main(["models", "pair", str(dense_target), str(draft)]) == 3
    out = capsys.readouterr().out
    assert "INCOMPATIBLE: weights: draft: model.safetensors is truncated: 300 B missing" in out
