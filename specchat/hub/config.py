"""Where the hub is and where its files go: one HubConfig passed to every hub call."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specchat.upstream.hf_hub import default_cache_dir, default_endpoint, hf_api

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_DEADLINE_S = 8.0


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
    def from_env(cls, **overrides) -> HubConfig:
        """The endpoint (HF_ENDPOINT) and cache (HF_HUB_CACHE / HF_HOME) huggingface_hub uses."""
        values = {"endpoint": default_endpoint(), "cache_dir": default_cache_dir()}
        values.update(overrides)
        values["endpoint"] = str(values["endpoint"]).rstrip("/")
        values["cache_dir"] = Path(values["cache_dir"]).expanduser()
        return cls(**values)

    def api(self):
        """An HfApi bound to this endpoint and token."""
        return hf_api(self.endpoint, self.token)

    def repo_url(self, repo_id: str) -> str:
        """The repo's page on the configured hub."""
        return f"{self.endpoint}/{repo_id}"
