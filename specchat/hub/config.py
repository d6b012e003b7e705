"""Where the hub is and where its files go: one HubConfig passed to every hub call."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, Unpack

from specchat.upstream.hf_hub import default_cache_dir, default_endpoint, hf_api

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_DEADLINE_S = 8.0


class HubOverrides(TypedDict, total=False):
    """The fields HubConfig.from_env() may be told instead of reading the environment."""

    endpoint: str
    cache_dir: str | Path
    token: str | bool | None
    timeout_s: float
    deadline_s: float


@dataclass(frozen=True)
class HubConfig:
    """The single configured endpoint, the HF cache folder, a token and time limits.

    token None means huggingface_hub's own handling (HF_TOKEN, or `hf auth login`).
    timeout_s bounds each HTTP read; deadline_s bounds a whole metadata call
    (search, model info), so an unreachable hub never hangs the caller.
    """

    endpoint: str
    cache_dir: Path
    token: str | bool | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    deadline_s: float = DEFAULT_DEADLINE_S

    @classmethod
    def from_env(cls, **overrides: Unpack[HubOverrides]) -> HubConfig:
        """The endpoint (HF_ENDPOINT) and cache (HF_HUB_CACHE / HF_HOME) huggingface_hub uses."""
        values: dict[str, Any] = {"endpoint": default_endpoint(), "cache_dir": default_cache_dir()}
        values.update(overrides)
        values["endpoint"] = str(values["endpoint"]).rstrip("/")
        values["cache_dir"] = Path(values["cache_dir"]).expanduser()
        return cls(**values)

    def api(self) -> Any:  # huggingface_hub's HfApi: only specchat.upstream may import huggingface_hub
        """An HfApi bound to this endpoint and token."""
        return hf_api(self.endpoint, self.token)

    def repo_url(self, repo_id: str) -> str:
        """The repo's page on the configured hub."""
        return f"{self.endpoint}/{repo_id}"
