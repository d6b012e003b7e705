"""huggingface_hub: the hub API, its cache, and the internals our resumable download relies on.

Internals used (each verified by `self_check`, and before every download):
- `file_download.http_get(url, temp_file, resume_size=, headers=, expected_size=,
  displayed_filename=, tqdm_class=)`: the transfer (Range resume, retries);
- `utils.WeakFileLock(lock_file)`: the lock huggingface_hub itself takes on a blob;
- `file_download.repo_folder_name(repo_id=, repo_type=)`: the cache folder of a repo;
- `utils.get_session()` / `utils.hf_raise_for_status(response)`: the shared HTTP client, used for
  byte-range reads of single tensors (`range_stream`), with the hub's own error translation.
Public calls checked too: `HfApi.parse_safetensors_file_metadata` gives a remote safetensors file's tensor
index (`safetensors_tensors`); it does not give the header's length, which absolute byte ranges need.
Internals are looked up when used, so a changed one gives a clear UpstreamMismatch, not an
AttributeError at import.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
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
    SafetensorsParsingError,
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
    "SafetensorsParsingError",
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
    "range_stream",
    "get_small_file",
    "RangeRefused",
    "RemoteTensor",
    "safetensors_tensors",
    "self_check",
    "download_check",
]

UPSTREAM, DISTRIBUTION = "huggingface_hub", "huggingface_hub"
PARSE_SAFETENSORS_PARAMETERS = ("repo_id", "filename", "revision", "token", "timeout")
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


class RangeRefused(Exception):
    """The server answered a byte-range request with something other than exactly that range."""


@contextmanager
def range_stream(url: str, start: int, end: int, headers: dict[str, str], timeout: float) -> Iterator[Iterator[bytes]]:
    """Stream bytes [start, end) of url through huggingface_hub's HTTP session (redirects followed).

    Raises RangeRefused (before reading any body) when the answer is not a 206 for that range, so a
    server that ignores Range never sends us the whole file.
    """
    session = _internal(hf_utils, "get_session", "utils.get_session")()
    raise_for_status = _internal(hf_utils, "hf_raise_for_status", "utils.hf_raise_for_status", ("response",))
    wanted = {**headers, "Range": f"bytes={start}-{end - 1}", "Accept-Encoding": "identity"}
    with session.stream("GET", url, headers=wanted, timeout=timeout, follow_redirects=True) as response:
        raise_for_status(response)
        got = response.headers.get("Content-Range", "")
        if response.status_code != 206 or not got.startswith(f"bytes {start}-{end - 1}/"):
            raise RangeRefused(f"asked for bytes {start}-{end - 1}, got HTTP {response.status_code} {got!r}")
        yield response.iter_bytes()


def get_small_file(url: str, headers: dict[str, str], timeout: float, limit: int) -> bytes:
    """A whole small file (an index, a config) through huggingface_hub's HTTP session; RangeRefused past limit."""
    session = _internal(hf_utils, "get_session", "utils.get_session")()
    raise_for_status = _internal(hf_utils, "hf_raise_for_status", "utils.hf_raise_for_status", ("response",))
    data = bytearray()
    with session.stream("GET", url, headers=headers, timeout=timeout, follow_redirects=True) as response:
        raise_for_status(response)
        for chunk in response.iter_bytes():
            data += chunk
            if len(data) > limit:
                raise RangeRefused(f"{url} is larger than {limit} bytes")
    return bytes(data)


@dataclass(frozen=True)
class RemoteTensor:
    """One tensor of a remote safetensors file as huggingface_hub parsed its header."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    data_offsets: tuple[int, int]  # [begin, end) from the end of the header


def safetensors_tensors(
    repo_id: str, filename: str, revision: str, endpoint: str, token: str | bool | None, timeout: float
) -> list[RemoteTensor]:
    """The tensors one remote safetensors file lists, through huggingface_hub's
    `HfApi.parse_safetensors_file_metadata` (it reads the file's first 100 kB, and the rest of a longer header).

    Raises HfHubHTTPError for the hub's answers and SafetensorsParsingError for a header that is not one.
    """
    api = hf_api(endpoint, token)
    parse = getattr(api, "parse_safetensors_file_metadata", None)
    problem = missing_parameters(parse, PARSE_SAFETENSORS_PARAMETERS)
    if problem or parse is None:
        raise UpstreamMismatch(_reason("HfApi.parse_safetensors_file_metadata", problem or "it is gone"))
    metadata = parse(repo_id=repo_id, filename=filename, revision=revision, token=token, timeout=timeout)
    return [
        RemoteTensor(name, str(info.dtype), tuple(int(n) for n in info.shape), _offsets(info.data_offsets))
        for name, info in metadata.tensors.items()
    ]


def _offsets(pair: Any) -> tuple[int, int]:
    begin, end = pair
    return int(begin), int(end)


def _probe_parse_safetensors() -> str | None:
    from huggingface_hub import HfApi

    return missing_parameters(getattr(HfApi, "parse_safetensors_file_metadata", None), PARSE_SAFETENSORS_PARAMETERS)


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
            "utils.get_session": _probe(hf_utils, "get_session", ()),
            "utils.hf_raise_for_status": _probe(hf_utils, "hf_raise_for_status", ("response",)),
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
        "HfApi.parse_safetensors_file_metadata": _probe_parse_safetensors,
    }
    check = download_check()
    extra = run_checks(UPSTREAM, DISTRIBUTION, public)
    return SelfCheck(check.upstream, check.version, check.results + extra.results)
