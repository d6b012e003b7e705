"""huggingface_hub: the hub API, its cache, and the internals our resumable download relies on.

Internals used (each verified by `self_check`, and before every download):
- `file_download.http_get(url, temp_file, resume_size=, headers=, expected_size=,
  displayed_filename=, tqdm_class=)`: the transfer (Range resume, retries);
- `utils.WeakFileLock(lock_file)`: the lock huggingface_hub itself takes on a blob;
- `file_download.repo_folder_name(repo_id=, repo_type=)`: the cache folder of a repo.
Internals are looked up when used, so a changed one gives a clear UpstreamMismatch, not an
AttributeError at import.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, BinaryIO

from huggingface_hub import constants, file_download, get_hf_file_metadata, hf_hub_download, hf_hub_url, scan_cache_dir
from huggingface_hub import utils as hf_utils
from huggingface_hub.errors import (
    CacheNotFound,
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.utils import build_hf_headers

from .checks import (
    HookProbe,
    SelfCheck,
    UpstreamMismatch,
    installed_version,
    mismatch_reason,
    missing_parameters,
    run_checks,
)

if TYPE_CHECKING:
    from huggingface_hub import HfApi

__all__ = [
    "CacheNotFound",
    "GatedRepoError",
    "HfHubHTTPError",
    "OfflineModeIsEnabled",
    "RepositoryNotFoundError",
    "RevisionNotFoundError",
    "build_hf_headers",
    "get_hf_file_metadata",
    "hf_hub_download",
    "hf_hub_url",
    "scan_cache_dir",
    "cached_repo_tree",
    "default_cache_dir",
    "default_endpoint",
    "hf_api",
    "http_get",
    "repo_folder_name",
    "weak_file_lock",
    "self_check",
    "download_check",
]

UPSTREAM, DISTRIBUTION = "huggingface_hub", "huggingface_hub"
HTTP_GET_PARAMETERS = (
    "url",
    "temp_file",
    "resume_size",
    "headers",
    "expected_size",
    "displayed_filename",
    "tqdm_class",
)


def default_endpoint() -> str:
    """The endpoint huggingface_hub uses (HF_ENDPOINT, read at its import)."""
    return constants.ENDPOINT


def default_cache_dir() -> Path:
    """The cache folder huggingface_hub uses (HF_HUB_CACHE / HF_HOME)."""
    return Path(constants.HF_HUB_CACHE)


def hf_api(endpoint: str, token: str | bool | None) -> HfApi:
    """An HfApi bound to an endpoint and token (imported on first use: it is large)."""
    from huggingface_hub import HfApi

    return HfApi(endpoint=endpoint, token=token, library_name="specchat")


def cached_repo_tree(repo_id: str, commit: str, cache_dir: Path) -> dict[str, int]:
    """{path: size} of a commit's file listing as huggingface_hub cached it; raises when none is cached."""
    from huggingface_hub import get_cached_repo_tree

    return {f.path: f.size for f in get_cached_repo_tree(repo_id, revision=commit, cache_dir=cache_dir)}


def _internal(module: ModuleType, name: str, qualified: str, parameters: tuple[str, ...] = ()) -> Any:
    """An internal, or UpstreamMismatch saying how it changed."""
    fn = getattr(module, name, None)
    problem = missing_parameters(fn, parameters) if parameters or fn is None else None
    if problem:
        raise UpstreamMismatch(_reason(qualified, problem))
    return fn


def _reason(hook: str, problem: str) -> str:
    return mismatch_reason(UPSTREAM, installed_version(DISTRIBUTION), hook, problem)


def http_get(url: str, out: BinaryIO, **kwargs: Any) -> None:
    """huggingface_hub's transfer into an open file (resume_size, headers, expected_size, tqdm_class...)."""
    _internal(file_download, "http_get", "file_download.http_get", HTTP_GET_PARAMETERS)(url, out, **kwargs)


def weak_file_lock(path: Path) -> AbstractContextManager[Any]:
    """huggingface_hub's own lock on a cache file (a context manager)."""
    return _internal(hf_utils, "WeakFileLock", "utils.WeakFileLock", ("lock_file",))(path)


def repo_folder_name(repo_id: str) -> str:
    """The folder name of a model repo in the HF cache (models--org--name)."""
    fn = _internal(file_download, "repo_folder_name", "file_download.repo_folder_name", ("repo_id", "repo_type"))
    return fn(repo_id=repo_id, repo_type="model")


def _probe(module: ModuleType, name: str, parameters: tuple[str, ...]) -> HookProbe:
    return lambda: missing_parameters(getattr(module, name, None), parameters)


def download_check() -> SelfCheck:
    """Verify the internals a download needs against the installed huggingface_hub."""
    return run_checks(
        UPSTREAM,
        DISTRIBUTION,
        {
            "file_download.http_get": _probe(file_download, "http_get", HTTP_GET_PARAMETERS),
            "utils.WeakFileLock": _probe(hf_utils, "WeakFileLock", ("lock_file",)),
            "file_download.repo_folder_name": _probe(file_download, "repo_folder_name", ("repo_id", "repo_type")),
        },
    )


def _probe_constants() -> str | None:
    missing = [n for n in ("ENDPOINT", "HF_HUB_CACHE") if not hasattr(constants, n)]
    return ("it no longer has " + ", ".join(f"`{n}`" for n in missing)) if missing else None


def self_check() -> SelfCheck:
    """Verify every huggingface_hub hook SpecChat uses (the download internals and the public calls)."""
    public = {
        "hf_hub_url": _probe(file_download, "hf_hub_url", ("repo_id", "filename", "revision", "endpoint")),
        "get_hf_file_metadata": _probe(file_download, "get_hf_file_metadata", ("url", "token", "timeout", "endpoint")),
        "hf_hub_download": _probe(
            file_download,
            "hf_hub_download",
            ("repo_id", "filename", "revision", "cache_dir", "endpoint", "token", "etag_timeout"),
        ),
        "constants": _probe_constants,
    }
    check = download_check()
    extra = run_checks(UPSTREAM, DISTRIBUTION, public)
    return SelfCheck(check.upstream, check.version, check.results + extra.results)
