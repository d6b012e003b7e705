"""One row per model the window shows: catalog, hub search hits and local folders, merged by repo id."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from specchat.hub.catalog import Catalog, CatalogModel
from specchat.hub.progress import DownloadProgress
from specchat.hub.search import SearchHit
from specchat.hub.store import LocalModel
from specchat.hub.units import format_bytes, format_duration

from ..plain_words import mtp_reason

COMPLETE, PARTIAL, NOT_DOWNLOADED = "complete", "partial", "not downloaded"
QUEUED, DOWNLOADING, DONE, CANCELLED, FAILED = "queued", "downloading", "done", "cancelled", "failed"
STATUS_TEXT = {COMPLETE: "Downloaded", PARTIAL: "Partial", NOT_DOWNLOADED: "Not downloaded"}
DASH = "—"


@dataclass(frozen=True)
class Transfer:
    """A download's state on a row (queued, downloading, done, cancelled, failed) and its last progress.

    done lasts until the rescan that follows shows the model as complete on disk.
    """

    state: str
    progress: DownloadProgress | None = None
    message: str = ""

    @property
    def fraction(self) -> float | None:
        """Share of the job's bytes on disk, None before the first report."""
        return self.progress.fraction if self.progress is not None else None


@dataclass(frozen=True)
class ModelRow:
    """Everything one line of the table says about a model."""

    key: str  # repo id (lower case) or the folder path of a model added by hand
    name: str
    catalog: CatalogModel | None = None
    hit: SearchHit | None = None
    local: LocalModel | None = None
    transfer: Transfer | None = None
    dflash_repo: str | None = None  # a target's DFlash drafter in the catalog
    dflash_target: str | None = None  # the target a catalog DFlash drafter drafts for

    @property
    def repo_id(self) -> str | None:
        """The hub repo, None for a folder the user added."""
        for source in (self.catalog, self.hit):
            if source is not None:
                return source.repo_id
        return self.local.repo_id if self.local is not None else None

    @property
    def is_dflash(self) -> bool:
        """A DFlash drafter (catalog role, or a folder whose config.json is one): not a model to chat with."""
        return bool(
            (self.local is not None and self.local.dflash) or (self.catalog is not None and self.catalog.is_dflash)
        )

    @property
    def status(self) -> str:
        """complete, partial or not downloaded (what is on disk, whatever a transfer is doing)."""
        if self.local is None:
            return NOT_DOWNLOADED
        return COMPLETE if self.local.complete else PARTIAL

    @property
    def busy(self) -> bool:
        """A download of this model is queued or running."""
        return self.transfer is not None and self.transfer.state in (QUEUED, DOWNLOADING)

    @property
    def usable(self) -> bool:
        """Complete on disk and not being downloaded: can be loaded as a target or draft."""
        return self.status == COMPLETE and not self.busy

    @property
    def deletable(self) -> bool:
        """Only downloads in the HF cache are deleted; folders the user added belong to the user."""
        return self.local is not None and self.local.source == "hf-cache" and not self.busy

    @property
    def downloadable(self) -> bool:
        """A hub model that is not complete yet and not already downloading."""
        return self.repo_id is not None and self.status != COMPLETE and not self.busy


def repo_ids(rows: Iterable[ModelRow]) -> list[str]:
    """The rows' hub repos (a folder the user added has none and is left out)."""
    return [r.repo_id for r in rows if r.repo_id is not None]


def row_key(repo_id: str) -> str:
    """Rows of the same repo merge, whatever its capitalisation."""
    return repo_id.lower()


def build_rows(
    catalog: Catalog, hits: Iterable[SearchHit], local: Iterable[LocalModel], query: str = ""
) -> list[ModelRow]:
    """Local models first, then the search hits; catalog facts attached wherever the repo is curated.

    Local models are always listed (filtered by the query's words), so a search never hides
    what is on disk.
    """
    rows: dict[str, ModelRow] = {}
    words = query.lower().split()
    for model in local:
        key = row_key(model.repo_id) if model.repo_id else str(model.path)
        if all(w in model.name.lower() for w in words):
            catalog_entry = catalog.get(model.repo_id) if model.repo_id else None
            rows[key] = ModelRow(key, model.name, catalog_entry, local=model)
    for hit in hits:
        key = row_key(hit.repo_id)
        if key in rows:
            rows[key] = replace(rows[key], hit=hit, catalog=rows[key].catalog or hit.catalog)
        else:
            rows[key] = ModelRow(key, hit.repo_id, hit.catalog or catalog.get(hit.repo_id), hit)
    return [_with_dflash_pairing(catalog, row) for row in rows.values()]


def _with_dflash_pairing(catalog: Catalog, row: ModelRow) -> ModelRow:
    """The row with the catalog's DFlash pairing: a target's drafter, or a drafter's target."""
    if row.repo_id is None:
        return row
    drafter = catalog.dflash_for(row.repo_id)
    return replace(
        row, dflash_repo=drafter.repo_id if drafter else None, dflash_target=catalog.dflash_target(row.repo_id)
    )


# --- what each column shows ---


def title_text(row: ModelRow) -> str:
    """The model's own name: the repo name without its owner, or the folder's name."""
    return row.name.rsplit("/", 1)[-1]


def subtitle_text(row: ModelRow) -> str:
    """Where the model comes from: the repo owner (curated, downloads), or the folder it is in."""
    if row.repo_id is None and row.local is not None:
        if row.local.source == "lm-studio":
            return f"LM Studio · {row.local.name.rsplit('/', 1)[0]}" if "/" in row.local.name else "LM Studio"
        return f"folder · {row.local.path.parent}"
    owner = row.name.split("/", 1)[0] if "/" in row.name else ""
    parts = [owner] if owner else []
    if row.catalog is not None:
        parts.append("curated")
    if row.hit is not None and row.hit.downloads is not None:
        parts.append(f"{row.hit.downloads:,} downloads")
    return " · ".join(parts)


def role_text(row: ModelRow) -> str:
    """target / draft / target or draft from the catalog; blank for other models."""
    if row.is_dflash:
        return "DFlash drafter"
    if row.catalog is None:
        return DASH
    return {"both": "target · draft"}.get(row.catalog.role, row.catalog.role)


def architecture_text(row: ModelRow) -> str:
    """dense or hybrid, with the model type when the folder is on disk."""
    facts = row.local.facts if row.local is not None else None
    if facts is not None:
        return f"{facts.architecture} ({facts.model_type})"
    return row.catalog.architecture if row.catalog is not None else DASH


def mtp_text(row: ModelRow) -> str:
    """Whether the model ships a multi-token-prediction head (and its depth when known); blank for a DFlash drafter."""
    if row.is_dflash:
        return DASH
    if row.local is not None and row.local.mtp_available is not None:
        if not row.local.mtp_available:
            return "no"
        depth = row.catalog.mtp_depth if row.catalog is not None and row.catalog.mtp_depth else None
        return f"depth {depth}" if depth else "yes"
    if row.catalog is not None:
        return f"depth {row.catalog.mtp_depth}" if row.catalog.mtp else "no"
    return DASH


def quantization_text(row: ModelRow) -> str:
    """Bits read from config.json when local, else the catalog's description."""
    facts = row.local.facts if row.local is not None else None
    if facts is not None:
        return f"{facts.quant_bits}-bit" if facts.quant_bits else "none"
    return row.catalog.quantization if row.catalog is not None else DASH


def size_text(row: ModelRow) -> str:
    """Bytes on disk when local, else the catalog's approximate download size."""
    if row.local is not None:
        return format_bytes(row.local.size_bytes)
    if row.catalog is not None:
        return f"≈ {row.catalog.approx_size_gb:g} GB"
    return DASH


def status_text(row: ModelRow) -> str:
    """What is on disk, or what the download is doing."""
    transfer = row.transfer
    if transfer is not None and transfer.state == QUEUED:
        return "Queued"
    if transfer is not None and transfer.state == DONE:
        return STATUS_TEXT[COMPLETE]
    if transfer is not None and transfer.state == DOWNLOADING:
        return "Verifying" if transfer.progress and transfer.progress.state == "verifying" else "Downloading"
    return STATUS_TEXT[row.status]


def progress_text(row: ModelRow) -> str:
    """Percent, speed and time left while downloading; the outcome afterwards."""
    transfer = row.transfer
    if transfer is None:
        return "" if row.status != PARTIAL else "resume to finish"
    p = transfer.progress
    if transfer.state == QUEUED:
        return "waiting for the download before it"
    if transfer.state == CANCELLED:
        return "cancelled · partial files kept"
    if transfer.state == FAILED:
        return transfer.message
    if p is None:
        return "asking the hub…"
    if p.state == "done":
        return f"{format_bytes(p.bytes_total)} · done"
    return f"{p.fraction:.0%} · {format_bytes(p.speed_bps)}/s · {format_duration(p.eta_s)} left"


def transfer_detail(p: DownloadProgress) -> str:
    """Bytes and files of a download, for the tooltip."""
    return (
        f"{format_bytes(p.bytes_done)} of {format_bytes(p.bytes_total)} · "
        f"file {min(p.files_done + 1, p.files_total)} of {p.files_total}: {p.filename}"
    )


def tooltip_text(row: ModelRow) -> str:
    """Path, why a model is partial, MTP detector's reason, catalog notes, hub numbers."""
    lines = [row.repo_id or row.name]
    if row.local is not None:
        lines.append(f"on disk: {row.local.path}")
        if row.local.missing:
            lines.append("missing: " + ", ".join(row.local.missing))
        if row.local.facts is not None and row.local.facts.context_length:
            lines.append(f"context: {row.local.facts.context_length:,} tokens")
        if row.local.vocab_hash:
            lines.append(f"vocabulary hash: {row.local.vocab_hash}")
        if row.local.mtp_reason and not row.local.dflash:
            plain, detail = mtp_reason(row.local.mtp_available, row.local.mtp_reason)
            lines.append(f"MTP: {plain}" + (f"\n  details: {detail}" if detail else ""))
    if row.dflash_repo:
        lines.append(f"DFlash drafter: {row.dflash_repo}")
    if row.dflash_target:
        lines.append(f"DFlash drafter for {row.dflash_target}")
    if row.catalog is not None and row.catalog.notes:
        lines.append(row.catalog.notes)
    if row.hit is not None and row.hit.downloads is not None:
        lines.append(f"{row.hit.downloads:,} downloads on the hub")
    if row.transfer is not None and row.transfer.progress is not None:
        lines.append(transfer_detail(row.transfer.progress))
    if row.transfer is not None and row.transfer.message:
        lines.append(row.transfer.message)
    return "\n".join(lines)
