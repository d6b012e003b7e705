"""Fetch one repo file into the HF cache, resumably, and check its hash.

huggingface_hub >= 1.x downloads into a uniquely named temp file that it deletes on
failure, so an interrupted download starts over. We keep the bytes instead: the
transfer runs through huggingface_hub's own `http_get` (Range resume, retries, auth
headers) into `blobs/<etag>.incomplete` (the name scan_cache_dir reports as an
incomplete download), is checked against the tree listing's sha256 (LFS) or git
sha1, moved to `blobs/<etag>`, and `hf_hub_download` then links it into the snapshot.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from urllib.parse import urlsplit

from specchat.upstream.hf_hub import (
    build_hf_headers,
    download_check,
    get_hf_file_metadata,
    hf_hub_download,
    hf_hub_url,
    http_get,
    repo_folder_name,
    weak_file_lock,
)

from .config import HubConfig
from .errors import CorruptFileError, DownloadCancelled, HubError
from .progress import ProgressTracker, tqdm_hook
from .remote import RemoteFile, RepoPlan, translate_error

HASH_CHUNK = 4 * 1024 * 1024


def storage_folder(config: HubConfig, repo_id: str) -> Path:
    """The repo's folder in the HF cache (models--org--name)."""
    return config.cache_dir / repo_folder_name(repo_id)


def snapshot_path(config: HubConfig, plan: RepoPlan) -> Path:
    """The snapshot folder of the plan's commit."""
    return storage_folder(config, plan.repo_id) / "snapshots" / plan.commit


def pointer_path(config: HubConfig, plan: RepoPlan, remote: RemoteFile) -> Path:
    """Where the file appears inside the snapshot folder."""
    return snapshot_path(config, plan).joinpath(*remote.path.split("/"))


def file_hash(path: Path, kind: str) -> str:
    """sha256 of the content, or git's blob sha1 ("blob <size>\\0" + content)."""
    digest = hashlib.sha256() if kind == "sha256" else hashlib.sha1()
    if kind != "sha256":
        digest.update(f"blob {path.stat().st_size}\0".encode())
    with path.open("rb") as f:
        while chunk := f.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify_file(path: Path, remote: RemoteFile) -> None:
    """Raise CorruptFileError when size or hash differ from the tree listing."""
    size = path.stat().st_size
    if size != remote.size:
        raise CorruptFileError(f"{remote.path}: {size} bytes on disk, the hub lists {remote.size}")
    actual = file_hash(path, remote.hash_kind)
    if actual != remote.expected_hash:
        raise CorruptFileError(
            f"{remote.path}: {remote.hash_kind} is {actual}, "
            f"the hub lists {remote.expected_hash}; the bad copy was deleted"
        )


def fetch_file(
    plan: RepoPlan, remote: RemoteFile, config: HubConfig, tracker: ProgressTracker, cancel: threading.Event | None
) -> Path:
    """Make sure one file is in the snapshot, downloading (or resuming) it when needed."""
    pointer = pointer_path(config, plan, remote)
    if pointer.exists():
        return pointer
    if cancel is not None and cancel.is_set():
        raise DownloadCancelled("download cancelled; run it again to resume")
    hooks = download_check()
    if not hooks.ok:
        raise HubError(f"cannot download {plan.repo_id}: {hooks.reason}")
    url = resolve_url(config, plan, remote)
    try:
        meta = get_hf_file_metadata(url, token=config.token, timeout=config.timeout_s, endpoint=config.endpoint)
    except Exception as exc:
        raise translate_error(exc, plan.repo_id, config) from exc
    if meta.etag is None:  # the blob is named by it
        raise HubError(f"{plan.repo_id}: the hub sent no ETag for {remote.path}")
    blob = storage_folder(config, plan.repo_id) / "blobs" / meta.etag
    if not blob.exists():
        _fetch_blob(plan, remote, config, blob, meta.location or url, tracker, cancel)
    return Path(
        hf_hub_download(
            plan.repo_id,
            remote.path,
            revision=plan.commit,
            cache_dir=config.cache_dir,
            endpoint=config.endpoint,
            token=config.token,
            etag_timeout=config.timeout_s,
        )
    )


def resolve_url(config: HubConfig, plan: RepoPlan, remote: RemoteFile) -> str:
    """huggingface_hub's resolve URL, refused unless it is on the configured endpoint.

    hf_hub_url swaps in `endpoint` only when its import-time template matches
    constants.ENDPOINT; hf_hub_download (used to link) builds its URL the same way.
    """
    url = hf_hub_url(plan.repo_id, remote.path, revision=plan.commit, endpoint=config.endpoint)
    if not url.startswith(config.endpoint + "/"):
        raise HubError(
            f"huggingface_hub would fetch {url}, not from the configured endpoint "
            f"{config.endpoint}; set HF_ENDPOINT before starting the app"
        )
    return url


def partial_path(blob: Path) -> Path:
    """The resumable partial file of a blob."""
    return blob.with_name(blob.name + ".incomplete")


def expected_blob(config: HubConfig, plan: RepoPlan, remote: RemoteFile) -> Path:
    """Where the blob will be: the hub's ETag is the LFS sha256 or the git blob id."""
    return storage_folder(config, plan.repo_id) / "blobs" / remote.expected_hash


def bytes_on_disk(config: HubConfig, plan: RepoPlan, remote: RemoteFile) -> int:
    """Bytes of this file already here: all of it when linked or blobbed, else the partial's size."""
    blob = expected_blob(config, plan, remote)
    if pointer_path(config, plan, remote).exists() or blob.exists():
        return remote.size
    partial = partial_path(blob)
    return min(partial.stat().st_size, remote.size) if partial.exists() else 0


def _fetch_blob(
    plan: RepoPlan,
    remote: RemoteFile,
    config: HubConfig,
    blob: Path,
    location: str,
    tracker: ProgressTracker,
    cancel: threading.Event | None,
) -> None:
    """Download (resuming) into <blob>.incomplete, verify, then move it into place."""
    blob.parent.mkdir(parents=True, exist_ok=True)
    lock = config.cache_dir / ".locks" / blob.parent.parent.name / f"{blob.name}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(blob)
    with weak_file_lock(lock):
        if blob.exists():
            return
        resume = partial.stat().st_size if partial.exists() else 0
        if resume > remote.size:
            partial.unlink()
            resume = 0
        headers = _headers(config, location)
        with partial.open("ab") as out:
            try:
                http_get(
                    location,
                    out,
                    resume_size=resume,
                    headers=headers,
                    expected_size=remote.size,
                    displayed_filename=remote.path,
                    tqdm_class=tqdm_hook(tracker, cancel),
                )
            except (DownloadCancelled, OSError):
                raise
            except Exception as exc:
                raise translate_error(exc, plan.repo_id, config) from exc
        tracker.report("verifying", force=True)
        try:
            verify_file(partial, remote)
        except CorruptFileError:
            partial.unlink(missing_ok=True)
            raise
        os.replace(partial, blob)


def _headers(config: HubConfig, location: str) -> dict[str, str]:
    """huggingface_hub's headers (token, user agent); no token for a CDN on another host."""
    headers = build_hf_headers(token=config.token, library_name="specchat")
    if urlsplit(location).netloc != urlsplit(config.endpoint).netloc:
        headers.pop("authorization", None)
    return headers
