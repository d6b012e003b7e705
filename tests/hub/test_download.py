"""Downloads with the real huggingface_hub client against the loopback hub."""

import hashlib
import threading

import pytest
from huggingface_hub import constants, scan_cache_dir

from specchat.engine.loading import load_model
from specchat.hub.config import HubConfig
from specchat.hub.download import download_bundle, download_model
from specchat.hub.errors import (
    AuthRequiredError,
    CorruptFileError,
    DownloadCancelled,
    HubError,
    NotEnoughDiskError,
    OfflineError,
)
from specchat.hub.transfer import storage_folder
from tests.hub.conftest import DRAFT_REPO, TARGET_REPO, point_hub_at
from tests.hub.hub_server import FakeRepo, HubServer

WEIGHTS = "model.safetensors"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def assert_same_files(snapshot, repo: FakeRepo):
    on_disk = {p.relative_to(snapshot).as_posix(): p.read_bytes() for p in snapshot.rglob("*") if p.is_file()}
    assert on_disk.keys() == repo.files.keys()
    for name, data in repo.files.items():
        assert sha256(on_disk[name]) == sha256(data), name


def test_full_download_lands_in_the_hf_cache_and_loads(hub, hub_config, target_repo):
    events = []
    path = download_model(TARGET_REPO, hub_config, on_progress=events.append)
    assert path == storage_folder(hub_config, TARGET_REPO) / "snapshots" / target_repo.commit
    assert_same_files(path, target_repo)
    assert (path.parent.parent / "refs" / "main").read_text() == target_repo.commit
    repos = {r.repo_id: r for r in scan_cache_dir(hub_config.cache_dir).repos}
    assert repos[TARGET_REPO].size_on_disk == sum(map(len, target_repo.files.values()))
    done = [e.bytes_done for e in events]
    assert done == sorted(done) and events[-1].state == "done"
    assert events[-1].bytes_done == events[-1].bytes_total == sum(map(len, target_repo.files.values()))
    assert events[-1].files_done == events[-1].files_total == len(target_repo.files)
    assert load_model(path).config["model_type"] == "qwen3"
    before = len(hub.requests)
    assert download_model(TARGET_REPO, hub_config) == path  # complete: nothing is fetched again
    assert not [p for _, p, _ in hub.requests[before:] if "/resolve/" in p]


def test_bundle_downloads_target_and_draft_as_one_job(hub, hub_config, target_repo, draft_repo):
    events = []
    paths = download_bundle([TARGET_REPO, DRAFT_REPO], hub_config, on_progress=events.append)
    assert_same_files(paths[0], target_repo)
    assert_same_files(paths[1], draft_repo)
    total = sum(map(len, target_repo.files.values())) + sum(map(len, draft_repo.files.values()))
    assert {e.bytes_total for e in events} == {total}
    assert events[-1].files_done == len(target_repo.files) + len(draft_repo.files)


@pytest.mark.slow
def test_dropped_connection_resumes_with_a_range_request(hub, hub_config, target_repo):
    hub.faults.drop_after[WEIGHTS] = 100_000
    path = download_model(TARGET_REPO, hub_config)
    ranges = hub.ranges_for(WEIGHTS)
    assert ranges[0] is None and len(ranges) == 2
    resumed_at = int(ranges[1].removeprefix("bytes=").rstrip("-"))
    assert 0 < resumed_at <= 100_000
    assert sha256((path / WEIGHTS).read_bytes()) == sha256(target_repo.files[WEIGHTS])


def test_cancel_keeps_the_partial_file_and_a_new_run_resumes_it(hub, hub_config, target_repo):
    hub.faults.slow_chunk, hub.faults.slow_delay_s = 16 * 1024, 0.02
    cancel = threading.Event()

    def cancel_midway(p):
        if p.filename == WEIGHTS and p.bytes_done > p.bytes_total - len(target_repo.files[WEIGHTS]) + 40_000:
            cancel.set()

    with pytest.raises(DownloadCancelled, match="resume"):
        download_model(TARGET_REPO, hub_config, on_progress=cancel_midway, cancel=cancel)
    blobs = storage_folder(hub_config, TARGET_REPO) / "blobs"
    partial = blobs / f"{target_repo.etag(WEIGHTS)}.incomplete"
    kept = partial.stat().st_size
    assert 0 < kept < len(target_repo.files[WEIGHTS])
    assert [f.size_on_disk for f in scan_cache_dir(hub_config.cache_dir).incomplete_files] == [kept]

    # A fresh call (as after an app restart) continues from the partial file.
    hub.faults.slow_chunk = 0
    events = []
    path = download_model(TARGET_REPO, hub_config, on_progress=events.append)
    assert hub.ranges_for(WEIGHTS)[-1] == f"bytes={kept}-"
    assert events[0].bytes_done >= kept
    assert sha256((path / WEIGHTS).read_bytes()) == sha256(target_repo.files[WEIGHTS])
    assert not partial.exists()


@pytest.mark.parametrize("name, kind", [(WEIGHTS, "sha256"), ("config.json", "git-sha1")])
def test_corrupt_file_is_detected_and_not_kept(hub, hub_config, target_repo, name, kind):
    hub.faults.corrupt.add(name)
    with pytest.raises(CorruptFileError, match=f"{name}: {kind}"):
        download_model(TARGET_REPO, hub_config)
    storage = storage_folder(hub_config, TARGET_REPO)
    assert not (storage / "snapshots" / target_repo.commit / name).exists()
    assert not list((storage / "blobs").glob("*.incomplete"))
    hub.faults.corrupt.clear()
    assert_same_files(download_model(TARGET_REPO, hub_config), target_repo)


def test_not_enough_disk_stops_before_any_byte(hub, hub_config, target_repo):
    total = sum(map(len, target_repo.files.values()))
    free = 50_000
    with pytest.raises(NotEnoughDiskError) as info:
        download_model(TARGET_REPO, hub_config, free=lambda path: free)
    assert info.value.missing_bytes == total - free
    assert f"free {(total - free) / 1e3:.1f} KB more" in str(info.value)
    assert not [p for m, p, _ in hub.requests if "/resolve/" in p]


def test_gated_repo_says_how_to_log_in(hub_env, monkeypatch, target_repo):
    gated = FakeRepo("org/Gated-4bit", target_repo.files, gated=True)
    with HubServer([gated]) as server:
        point_hub_at(monkeypatch, server.url)
        config = HubConfig.from_env(deadline_s=5)
        with pytest.raises(AuthRequiredError, match="hf auth login"):
            download_model(gated.repo_id, config)


def test_offline_download_fails_fast_with_a_clear_error(hub_env):
    config = HubConfig.from_env(deadline_s=5)  # hub_env points at a port nobody listens on
    with pytest.raises(OfflineError, match="offline") as refused:
        download_model(TARGET_REPO, config)
    # the refused connection ended it, not the deadline: no retry loop outlasted 5 s
    assert "cannot reach" in str(refused.value) and "did not answer" not in str(refused.value)


def test_download_uses_only_the_configured_endpoint(hub, hub_config, monkeypatch, target_repo):
    # huggingface_hub builds resolve URLs from an import-time template; when that no longer
    # matches constants.ENDPOINT it would keep the old host, so we refuse instead.
    monkeypatch.setattr(
        constants, "HUGGINGFACE_CO_URL_TEMPLATE", "http://127.0.0.1:9/{repo_id}/resolve/{revision}/{filename}"
    )
    with pytest.raises(HubError, match="not from the configured endpoint"):
        download_model(TARGET_REPO, hub_config)
    assert not [p for m, p, _ in hub.requests if "/resolve/" in p]
