"""Hub tests: huggingface_hub pointed at a loopback server, its cache and home in tmp_path."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from huggingface_hub import constants
from huggingface_hub.utils import _detect_agent

from specchat.hub.config import HubConfig
from tests.fixtures.dflash_models import build_dflash
from tests.hub.hub_server import FakeRepo, HubServer

TARGET_REPO = "mlx-community/Tiny-Target-4bit"
DRAFT_REPO = "mlx-community/Tiny-Draft-4bit"
DFLASH_REPO = "z-lab/Tiny-Target-DFlash-b16"  # a DFlash drafter trained for TARGET_REPO
SMALL_CHUNK = 16 * 1024  # so progress and cancel happen mid-file on tiny fixtures


def point_hub_at(monkeypatch, url: str) -> None:
    """Make huggingface_hub's endpoint url, as HF_ENDPOINT would at import time."""
    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setattr(constants, "ENDPOINT", url)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", url + "/{repo_id}/resolve/{revision}/{filename}")


def unused_port_url() -> str:
    """http://127.0.0.1:<a port nobody listens on>."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def hub_env(tmp_path, monkeypatch):
    """HF_HOME / HF_HUB_CACHE in tmp_path, no token, no Xet, small download chunks."""
    home, cache = tmp_path / "hf_home", tmp_path / "hf_home" / "hub"
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("SPECCHAT_HOME", str(tmp_path / "specchat"))
    monkeypatch.setattr(constants, "HF_HOME", str(home))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(home / "token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(home / "stored_tokens"))
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", SMALL_CHUNK)
    # Nothing may reach the internet: the default endpoint is a dead loopback port, and
    # huggingface_hub's user-agent agent detection must not fetch its registry.
    point_hub_at(monkeypatch, unused_port_url())
    monkeypatch.setattr(_detect_agent, "_registry", _detect_agent._EMPTY_REGISTRY)
    return cache


@pytest.fixture
def target_repo(dense_target) -> FakeRepo:
    """The tiny dense target's files as a hub repo."""
    return FakeRepo.from_folder(TARGET_REPO, dense_target, downloads=50)


@pytest.fixture
def draft_repo(dense_draft_partial) -> FakeRepo:
    """The tiny partial-agreement draft as a hub repo."""
    return FakeRepo.from_folder(DRAFT_REPO, dense_draft_partial, downloads=10)


@pytest.fixture(scope="session")
def dflash_drafter(tiny_root, dense_target) -> Path:
    """A tiny random DFlash drafter folder for the tiny dense target (config.json + model.safetensors only)."""
    return build_dflash(tiny_root / "dflash_for_dense_target", dense_target)


@pytest.fixture
def dflash_repo(dflash_drafter) -> FakeRepo:
    """The tiny DFlash drafter as a hub repo."""
    return FakeRepo.from_folder(DFLASH_REPO, dflash_drafter, downloads=5)


@pytest.fixture
def hub(hub_env, monkeypatch, target_repo, draft_repo):
    """A running loopback hub with the target and the draft; HF_ENDPOINT points at it."""
    with HubServer([target_repo, draft_repo]) as server:
        point_hub_at(monkeypatch, server.url)
        yield server


@pytest.fixture
def hub_config(hub, hub_env) -> HubConfig:
    """HubConfig.from_env() as the app builds it, with short time limits."""
    return HubConfig.from_env(timeout_s=5.0, deadline_s=5.0)
