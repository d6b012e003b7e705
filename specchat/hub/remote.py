"""What the hub says about a repo: its commit, files, sizes and hashes; hub errors as HubErrors."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx

from specchat.upstream.hf_hub import (
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from .config import HubConfig
from .errors import AuthRequiredError, HubError, OfflineError, RepoNotFoundError

T = TypeVar("T")
LOGIN_HINT = "log in with `hf auth login` or set the HF_TOKEN environment variable"


@dataclass(frozen=True)
class RemoteFile:
    """One file of a repo as the tree listing gives it."""

    path: str
    size: int
    blob_id: str
    lfs_sha256: str | None = None

    @property
    def hash_kind(self) -> str:
        """ "sha256" for LFS files (content hash), "git-sha1" for regular git blobs."""
        return "sha256" if self.lfs_sha256 else "git-sha1"

    @property
    def expected_hash(self) -> str:
        """The hash the downloaded content must have."""
        return (self.lfs_sha256 or self.blob_id).lower()


@dataclass(frozen=True)
class RepoPlan:
    """A repo pinned to one commit, with every file to fetch."""

    repo_id: str
    revision: str
    commit: str
    files: tuple[RemoteFile, ...]

    @property
    def total_bytes(self) -> int:
        """Sum of all file sizes."""
        return sum(f.size for f in self.files)


def call_with_deadline(fn: Callable[[], T], deadline_s: float, what: str) -> T:
    """Run fn in a daemon thread and give up after deadline_s (huggingface_hub has no overall timeout)."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=run, name=f"hub: {what}", daemon=True)
    worker.start()
    worker.join(deadline_s)
    if worker.is_alive():
        raise OfflineError(f"offline: the hub did not answer {what} within {deadline_s:g} s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def translate_error(exc: BaseException, repo_id: str | None, config: HubConfig) -> BaseException:
    """A HubError with an actionable message for a huggingface_hub / httpx error; others unchanged."""
    where = config.repo_url(repo_id) if repo_id else config.endpoint
    if isinstance(exc, HubError):
        return exc
    if isinstance(exc, GatedRepoError):
        return AuthRequiredError(f"{repo_id} is gated: accept its conditions at {where}, then {LOGIN_HINT}")
    if isinstance(exc, RevisionNotFoundError):
        return RepoNotFoundError(f"{repo_id}: revision not found on {config.endpoint}")
    if isinstance(exc, RepositoryNotFoundError):
        return RepoNotFoundError(f"{repo_id} was not found on {config.endpoint}; if it is private, {LOGIN_HINT}")
    if isinstance(exc, OfflineModeIsEnabled):
        return OfflineError(f"offline: HF_HUB_OFFLINE is set, so {config.endpoint} was not asked")
    if isinstance(exc, (httpx.ConnectError, httpx.TimeoutException, httpx.NetworkError)):
        return OfflineError(f"offline: cannot reach {config.endpoint} ({type(exc).__name__}: {exc})")
    if isinstance(exc, HfHubHTTPError):
        status = exc.response.status_code if exc.response is not None else "?"
        if status in (401, 403):
            return AuthRequiredError(f"{repo_id}: access denied (HTTP {status}); {LOGIN_HINT}")
        return HubError(f"{repo_id}: the hub answered HTTP {status}: {str(exc).splitlines()[0]}")
    return exc


def hub_call(fn: Callable[[], T], config: HubConfig, what: str, repo_id: str | None = None) -> T:
    """fn() under the config's deadline, with hub errors translated."""
    try:
        return call_with_deadline(fn, config.deadline_s, what)
    except BaseException as exc:
        translated = translate_error(exc, repo_id, config)
        if translated is exc:
            raise
        raise translated from exc


def fetch_plan(repo_id: str, config: HubConfig, revision: str = "main") -> RepoPlan:
    """Resolve revision to a commit and list the repo's files with sizes and hashes."""
    api = config.api()

    def fetch() -> RepoPlan:
        info = api.model_info(repo_id, revision=revision, timeout=config.timeout_s)
        if not info.sha:
            raise HubError(f"{repo_id}: the hub did not say which commit {revision} is")
        files = tuple(
            RemoteFile(entry.path, int(entry.size), entry.blob_id, entry.lfs.sha256 if entry.lfs is not None else None)
            for entry in api.list_repo_tree(repo_id, revision=info.sha, recursive=True)
            if hasattr(entry, "blob_id")
        )
        return RepoPlan(repo_id, revision, info.sha, files)

    plan = hub_call(fetch, config, f"about {repo_id}", repo_id)
    if not plan.files:
        raise HubError(f"{repo_id} has no files at {revision}")
    unsafe = [f.path for f in plan.files if unsafe_file_path(f.path)]
    if unsafe:  # huggingface_hub would refuse it mid-download with a bare ValueError
        raise HubError(
            f"{repo_id} is refused: its file list names {unsafe[0]!r}, a path that leaves "
            f"the model folder ({len(unsafe)} such file(s)); nothing was downloaded"
        )
    return plan


def unsafe_file_path(path: str) -> bool:
    """True for a listed file name that is absolute or has empty, "." or ".." segments."""
    return path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in path.split("/"))
