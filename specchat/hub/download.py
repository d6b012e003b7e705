"""Download one model or a target + draft bundle into the HF cache: plan, check disk, fetch, verify."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .config import HubConfig
from .errors import DownloadCancelled, NotEnoughDiskError
from .progress import ProgressCallback, ProgressTracker
from .remote import RepoPlan, fetch_plan
from .transfer import bytes_on_disk, fetch_file, snapshot_path, storage_folder
from .units import format_bytes

MANIFEST_DIR = ".specchat"  # inside the repo's cache folder; scan_cache_dir ignores it

FreeSpace = Callable[[Path], int]


def free_space(path: Path) -> int:
    """Free bytes on the disk holding path (or its nearest existing parent)."""
    path = Path(path)
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


@dataclass(frozen=True)
class SpaceCheck:
    """Bytes still to download against free bytes on the cache's disk."""

    needed_bytes: int
    free_bytes: int
    folder: Path

    @property
    def missing_bytes(self) -> int:
        """How much more free space the download needs (0 when it fits)."""
        return max(self.needed_bytes - self.free_bytes, 0)

    @property
    def fits(self) -> bool:
        """True when the download fits."""
        return self.missing_bytes == 0


def bytes_to_download(plans: Sequence[RepoPlan], config: HubConfig) -> int:
    """Bytes of every planned file not yet on disk (partial files count for what they hold)."""
    return sum(f.size - bytes_on_disk(config, p, f) for p in plans for f in p.files)


def check_disk_space(plans: Sequence[RepoPlan], config: HubConfig, free: FreeSpace | None = None) -> SpaceCheck:
    """Compare what the plans still need with the free space; raise NotEnoughDiskError if short."""
    free_bytes = (free or free_space)(config.cache_dir)
    check = SpaceCheck(bytes_to_download(plans, config), free_bytes, config.cache_dir)
    if not check.fits:
        names = " + ".join(p.repo_id for p in plans)
        raise NotEnoughDiskError(
            f"not enough disk space for {names}: {format_bytes(check.needed_bytes)} to download, "
            f"{format_bytes(check.free_bytes)} free at {check.folder}; free "
            f"{format_bytes(check.missing_bytes)} more",
            check.missing_bytes,
        )
    return check


def plan_bundle(repo_ids: Sequence[str], config: HubConfig, revision: str = "main") -> list[RepoPlan]:
    """Ask the hub for each repo's commit and file list (target first, then draft)."""
    return [fetch_plan(repo_id, config, revision) for repo_id in dict.fromkeys(repo_ids)]


def download_bundle(
    repo_ids: Sequence[str],
    config: HubConfig,
    on_progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    free: FreeSpace | None = None,
    revision: str = "main",
) -> list[Path]:
    """Download every repo (e.g. a target and its draft) as one job; returns their snapshot folders.

    Resumes partial files left by an earlier run; raises DownloadCancelled when cancel is set,
    NotEnoughDiskError before any byte when the bundle does not fit.
    """
    plans = plan_bundle(repo_ids, config, revision)
    check_disk_space(plans, config, free)
    done = sum(bytes_on_disk(config, p, f) for p in plans for f in p.files)
    total = sum(p.total_bytes for p in plans)
    tracker = ProgressTracker(total, done, sum(len(p.files) for p in plans), on_progress)
    try:
        for plan in plans:
            _download_plan(plan, config, tracker, cancel)
    except DownloadCancelled:
        tracker.report("cancelled", force=True)
        raise
    tracker.report("done", force=True)
    return [snapshot_path(config, p) for p in plans]


def download_model(
    repo_id: str,
    config: HubConfig,
    *,
    on_progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    free: FreeSpace | None = None,
    revision: str = "main",
) -> Path:
    """Download one repo; see download_bundle."""
    return download_bundle([repo_id], config, on_progress, cancel, free, revision)[0]


def _download_plan(plan: RepoPlan, config: HubConfig, tracker: ProgressTracker, cancel: threading.Event | None) -> None:
    """Record the file list and the ref, then fetch the small files first."""
    write_manifest(plan, config)
    for remote in sorted(plan.files, key=lambda f: (f.size, f.path)):
        tracker.start_file(plan.repo_id, remote.path)
        fetch_file(plan, remote, config, tracker, cancel)
        tracker.finish_file()


def fetch_config(plan: RepoPlan, config: HubConfig) -> dict:
    """Download (verified) and parse just the repo's config.json, e.g. for a memory fit up front."""
    names = {f.path: f for f in plan.files}
    if "config.json" not in names:
        return {}
    write_manifest(plan, config)
    path = fetch_file(plan, names["config.json"], config, ProgressTracker(0, 0, 0, None), None)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_manifest(plan: RepoPlan, config: HubConfig) -> None:
    """Save the expected files of the commit and point refs/<revision> at it.

    The snapshot folder is created with the ref, so the cache stays valid for
    scan_cache_dir while files are still missing; the manifest tells the store
    which files are.
    """
    storage = storage_folder(config, plan.repo_id)
    snapshot_path(config, plan).mkdir(parents=True, exist_ok=True)
    manifest = storage / MANIFEST_DIR / f"{plan.commit}.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    files = {f.path: {"size": f.size, "hash": f.expected_hash, "kind": f.hash_kind} for f in plan.files}
    manifest.write_text(
        json.dumps({"repo_id": plan.repo_id, "commit": plan.commit, "files": files}, indent=1, sort_keys=True)
    )
    if plan.revision != plan.commit:
        ref = storage / "refs" / plan.revision
        ref.parent.mkdir(parents=True, exist_ok=True)
        ref.write_text(plan.commit)


def read_manifest(storage: Path, commit: str) -> dict[str, int] | None:
    """{path: size} saved by write_manifest, or None when there is none."""
    path = storage / MANIFEST_DIR / f"{commit}.json"
    try:
        files = json.loads(path.read_text())["files"]
        return {name: int(meta["size"]) for name, meta in files.items()}
    except (OSError, ValueError, KeyError, TypeError):
        return None
