"""Search: the catalog merged with Hugging Face's MLX text-generation models; the catalog alone offline."""

from __future__ import annotations

from dataclasses import dataclass

from .catalog import Catalog, CatalogModel
from .config import HubConfig
from .errors import AuthRequiredError, HubError, OfflineError
from .remote import hub_call

DEFAULT_LIMIT = 50


@dataclass(frozen=True)
class SearchHit:
    """A model to show: from the catalog, from the hub, or both."""

    repo_id: str
    catalog: CatalogModel | None
    downloads: int | None = None
    likes: int | None = None
    on_hub: bool = False

    @property
    def curated(self) -> bool:
        """True for catalog models."""
        return self.catalog is not None


@dataclass(frozen=True)
class SearchResult:
    """Hits plus whether the hub answered; message says why not when it did not."""

    hits: tuple[SearchHit, ...]
    online: bool
    message: str = ""

    @property
    def state(self) -> str:
        """ "online" or "offline"."""
        return "online" if self.online else "offline"


def catalog_hits(catalog: Catalog, query: str) -> list[SearchHit]:
    """Catalog models whose repo id contains every word of the query (case-insensitive)."""
    words = query.lower().split()
    return [SearchHit(m.repo_id, m) for m in catalog.models if all(w in m.repo_id.lower() for w in words)]


def hub_hits(query: str, config: HubConfig, limit: int = DEFAULT_LIMIT) -> list[SearchHit]:
    """MLX text-generation models on the hub matching the query, most downloaded first."""
    api = config.api()

    def fetch() -> list[SearchHit]:
        found = api.list_models(
            search=query or None, filter="mlx", pipeline_tag="text-generation", sort="downloads", limit=limit
        )
        return [SearchHit(m.id, None, m.downloads, m.likes, on_hub=True) for m in found]

    return hub_call(fetch, config, "the search")


def search_models(query: str, catalog: Catalog, config: HubConfig | None, limit: int = DEFAULT_LIMIT) -> SearchResult:
    """Catalog hits first (with hub numbers when online), then other hub hits; never hangs."""
    local = catalog_hits(catalog, query)
    if config is None:
        return SearchResult(tuple(local), False, "offline: no hub configured; showing the catalog")
    try:
        remote = hub_hits(query, config, limit)
    except (OfflineError, AuthRequiredError, HubError) as exc:
        return SearchResult(tuple(local), False, f"{exc}; showing the catalog only")
    by_id = {h.repo_id.lower(): h for h in remote}
    merged = [SearchHit(h.repo_id, h.catalog, *_numbers(by_id.pop(h.repo_id.lower(), None))) for h in local]
    extra = [
        SearchHit(h.repo_id, catalog.get(h.repo_id), h.downloads, h.likes, True)
        for h in remote
        if h.repo_id.lower() in by_id
    ]
    return SearchResult(tuple(merged + extra), True)


def _numbers(hit: SearchHit | None) -> tuple[int | None, int | None, bool]:
    return (hit.downloads, hit.likes, True) if hit is not None else (None, None, False)
