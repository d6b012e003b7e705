"""Model manager core (no Qt): catalog, hub search, resumable downloads, local store, pairing, memory fit.

Modules: catalog (curated models), search (catalog + hub), download / transfer / progress
(HF cache downloads with resume, hash checks, cancel), store (local models), pairing
(draft compatibility), dflash (DFlash drafter folders: the engine's file checks, the fit to a target),
memory_fit (green / yellow / red), cli (`python -m specchat models`).
Names below are imported lazily so `import specchat.hub` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "HubConfig": "config",
    "load_catalog": "catalog",
    "Catalog": "catalog",
    "search_models": "search",
    "SearchResult": "search",
    "download_bundle": "download",
    "download_model": "download",
    "check_disk_space": "download",
    "DownloadProgress": "progress",
    "scan_local_models": "store",
    "LocalModel": "store",
    "delete_model": "store",
    "pair_report": "pairing",
    "compatible_drafts": "pairing",
    "memory_fit": "memory_fit",
    "model_memory": "memory_fit",
    "HubError": "errors",
    "OfflineError": "errors",
    "AuthRequiredError": "errors",
    "NotEnoughDiskError": "errors",
    "CorruptFileError": "errors",
    "DownloadCancelled": "errors",
}


def __getattr__(name: str) -> Any:  # the export named, imported on first use
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'specchat.hub' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
