"""Add an MTP head to a local Qwen3.5+ model: fetch only the original's `mtp.*` tensors, convert, write the sidecar.

`plan_head` (mtp_plan.py) reads the original's index and the headers of the shards that hold the
head; `add_head` fetches just those tensors' byte ranges (resumable, size-checked), converts them to
the local model's dtype and quantization (mtp_convert.py), writes the sidecar mlx-optiq and our MTP
loader read, and a `<sidecar>.source.json` saying where it came from.
"""

from __future__ import annotations

import hashlib
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlx.core as mx

from specchat.engine.mtp_detect import config_mtp_layers, detect_mtp
from specchat.jsonfile import write_json_atomic
from specchat.upstream.hf_hub import HfHubHTTPError

from .catalog import Catalog
from .config import HubConfig
from .download import FreeSpace, free_space
from .errors import DownloadCancelled, NotEnoughDiskError
from .model_facts import read_config
from .mtp_convert import save_sidecar, to_local
from .mtp_plan import HeadPlan, MtpHeadError, plan_head, range_source
from .progress import ProgressCallback, ProgressTracker
from .remote import translate_error
from .safetensors_ranges import TensorSpan, fetch_span, write_safetensors
from .units import format_bytes

STAGING_DIR = ".specchat-mtp"  # inside the model folder: partial tensors, kept for a resume
SOURCE_SUFFIX = ".source.json"

__all__ = ["AddedHead", "HeadPlan", "MtpHeadError", "add_head", "add_mtp_head", "plan_head", "source_file"]


@dataclass(frozen=True)
class AddedHead:
    """The model folder, the sidecar written, its provenance file, and the bytes fetched for it in this run."""

    folder: Path
    sidecar: Path
    source: Path
    fetched_bytes: int
    reason: str  # what MTP detection now says


def source_file(sidecar: Path) -> Path:
    """The provenance JSON beside a sidecar (optiq/mtp.safetensors -> optiq/mtp.source.json)."""
    return sidecar.with_name(sidecar.name.removesuffix(".safetensors") + SOURCE_SUFFIX)


def staging_folder(plan: HeadPlan) -> Path:
    """Where this plan's partial tensors wait (one folder per original commit)."""
    return plan.folder / STAGING_DIR / plan.commit[:16]


def part_path(plan: HeadPlan, span: TensorSpan) -> Path:
    """The partial file of one tensor."""
    return staging_folder(plan) / (hashlib.sha1(f"{span.shard}:{span.name}".encode()).hexdigest()[:20] + ".part")


def _have(plan: HeadPlan, span: TensorSpan) -> int:
    part = part_path(plan, span)
    return min(part.stat().st_size, span.nbytes) if part.exists() else 0


def check_space(plan: HeadPlan, free: FreeSpace | None = None) -> int:
    """Bytes still needed (the rest of the head, then the sidecar beside it); NotEnoughDiskError if short."""
    needed = plan.head_bytes - sum(_have(plan, s) for s in plan.spans) + 2 * plan.head_bytes
    available = (free or free_space)(plan.folder)
    if needed > available:
        raise NotEnoughDiskError(
            f"not enough disk space for the MTP head of {plan.folder.name}: {format_bytes(needed)} needed "
            f"(the head's {format_bytes(plan.head_bytes)} plus its converted copy), {format_bytes(available)} "
            f"free at {plan.folder}; free {format_bytes(needed - available)} more",
            needed - available,
        )
    return needed


def _fetch_all(
    plan: HeadPlan, config: HubConfig, tracker: ProgressTracker, cancel: threading.Event | None
) -> list[str]:
    """Fetch every tensor (resuming partial ones); their sha256s in plan order."""
    hashes = []
    for span in plan.spans:
        if cancel is not None and cancel.is_set():
            raise DownloadCancelled("cancelled; the bytes fetched so far are kept, run it again to resume")
        tracker.start_file(plan.original.repo_id, span.name)
        source = range_source(config, plan.original.repo_id, plan.commit, span.shard)
        try:
            hashes.append(fetch_span(source, span, part_path(plan, span), tracker.add, cancel))
        except HfHubHTTPError as exc:
            raise translate_error(exc, plan.original.repo_id, config) from exc
        tracker.finish_file()
    return hashes


def _convert(plan: HeadPlan) -> dict[str, mx.array]:
    """The fetched tensors as the local model stores weights."""
    staging = staging_folder(plan)
    raw_file = staging / "head.raw.safetensors"
    spans = list(plan.spans)
    write_safetensors(raw_file, spans, [part_path(plan, s) for s in spans], [s.name for s in spans])
    loaded = mx.load(str(raw_file))
    assert isinstance(loaded, dict)
    return to_local(loaded, plan.fmt)


def _declare_layers(plan: HeadPlan) -> bool:
    """Add mtp_num_hidden_layers to config.json when the conversion dropped it; True when it changed."""
    config = read_config(plan.folder)
    if config_mtp_layers(config):
        return False
    section = config["text_config"] if isinstance(config.get("text_config"), dict) else config
    section["mtp_num_hidden_layers"] = plan.num_layers
    write_json_atomic(plan.folder / "config.json", config)
    return True


def _provenance(plan: HeadPlan, config: HubConfig, hashes: list[str], tensors: dict, changed: bool) -> dict[str, Any]:
    return {
        "repo_id": plan.original.repo_id,
        "found_in": plan.original.found_in,
        "revision": plan.commit,
        "endpoint": config.endpoint,
        "sidecar": plan.sidecar.relative_to(plan.folder).as_posix(),
        "head_bytes": plan.head_bytes,
        "index_and_header_bytes": plan.meta_bytes,
        "local_format": plan.fmt.describe,
        "config_json_gained_mtp_num_hidden_layers": changed,
        "tensors": [
            {"name": s.name, "shard": s.shard, "dtype": s.dtype, "shape": list(s.shape), "bytes": s.nbytes, "sha256": h}
            for s, h in zip(plan.spans, hashes)
        ],
        "sidecar_tensors": sorted(tensors),
        "hash_note": "the hub lists sha256 for whole files only; each tensor was size-checked against the header",
    }


def add_head(
    plan: HeadPlan,
    config: HubConfig,
    on_progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    free: FreeSpace | None = None,
) -> AddedHead:
    """Fetch, convert and write the planned head; DownloadCancelled keeps the partial tensors for a resume."""
    check_space(plan, free)
    done = sum(_have(plan, s) for s in plan.spans)
    tracker = ProgressTracker(plan.head_bytes, done, len(plan.spans), on_progress)
    try:
        hashes = _fetch_all(plan, config, tracker, cancel)
    except DownloadCancelled:
        tracker.report("cancelled", force=True)
        raise
    tracker.report("verifying", force=True)
    tensors = _convert(plan)
    save_sidecar(plan.sidecar, tensors)
    changed = _declare_layers(plan)
    source = source_file(plan.sidecar)
    write_json_atomic(source, _provenance(plan, config, hashes, tensors, changed))
    shutil.rmtree(plan.folder / STAGING_DIR, ignore_errors=True)
    support = detect_mtp(plan.folder)
    if not support.available:
        raise MtpHeadError(f"the head was written to {plan.sidecar} but is not detected: {support.reason}")
    tracker.report("done", force=True)
    return AddedHead(plan.folder, plan.sidecar, source, tracker.bytes_done - done, support.reason)


def add_mtp_head(
    folder: Path,
    config: HubConfig,
    original: str | None = None,
    catalog: Catalog | None = None,
    on_progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    free: FreeSpace | None = None,
) -> AddedHead:
    """plan_head, then add_head: the whole job in one call (for a worker thread)."""
    return add_head(plan_head(folder, config, original, catalog), config, on_progress, cancel, free)
