"""Models on this machine: the HF cache (scan_cache_dir), LM Studio's model folders and folders the user added."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from specchat.upstream.hf_hub import CacheNotFound, cached_repo_tree, scan_cache_dir

from .config import HubConfig
from .dflash import is_dflash_config, is_dflash_folder
from .discovery import FoundModel, folder_models, lmstudio_dirs, unique_by_path
from .download import read_manifest
from .errors import ConfirmationRequired, HubError
from .model_facts import ModelFacts, facts_from_config, read_config, size_on_disk
from .tokenizer_info import VocabHashCache, missing_tokenizer
from .weights_check import broken_weights

DFLASH_NO_MTP = "a DFlash drafter: it drafts for its target and has no MTP head"


@dataclass(frozen=True)
class LocalModel:
    """One model folder with what the model manager shows about it."""

    name: str
    path: Path
    source: str  # "hf-cache", "lm-studio" or "folder"
    repo_id: str | None
    size_bytes: int
    complete: bool
    missing: tuple[str, ...]  # why it is partial
    facts: ModelFacts | None
    vocab_hash: str | None
    mtp_available: bool | None
    mtp_reason: str
    dflash: bool = False  # a DFlash drafter (no tokenizer of its own): drafts for its target, not a model to chat with


class CachedRevision(Protocol):
    """What we read of huggingface_hub's CachedRevisionInfo (only specchat.upstream imports huggingface_hub)."""

    @property
    def commit_hash(self) -> str: ...
    @property
    def snapshot_path(self) -> Path: ...
    @property
    def refs(self) -> Set[str]: ...
    @property
    def last_modified(self) -> float: ...


class CachedRepo(Protocol):
    """What we read of huggingface_hub's CachedRepoInfo."""

    @property
    def repo_id(self) -> str: ...
    @property
    def repo_path(self) -> Path: ...
    @property
    def revisions(self) -> Set[CachedRevision]: ...


def detect_mtp_head(folder: Path) -> tuple[bool | None, str]:
    """(available, reason) from the engine's MTP detector; (None, why) when it cannot tell."""
    try:
        from specchat.engine.mtp_detect import detect_mtp
    except ImportError:
        return None, "MTP detection is not available in this build"
    try:
        support = detect_mtp(Path(folder))
    except Exception as exc:  # a broken folder must not break the list
        return None, f"MTP detection failed: {exc}"
    return bool(support.available), str(support.reason)


def missing_weights(folder: Path) -> list[str]:
    """What a loadable folder lacks: config, weights, shards the index names, whole weights, a tokenizer."""
    folder = Path(folder)
    problems = [] if (folder / "config.json").is_file() else ["config.json"]
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = set(json.loads(index.read_text())["weight_map"].values())
        except (OSError, ValueError, KeyError, AttributeError):
            return problems + [index.name + " is unreadable"]
        problems += sorted(s for s in shards if not (folder / s).is_file())
    elif not any(folder.glob("*.safetensors")):
        problems.append("*.safetensors weights")
    return _with_broken_weights(folder, problems)


def _with_broken_weights(folder: Path, missing: list[str]) -> list[str]:
    """missing plus weights cut short of what their headers list, and a missing tokenizer (a DFlash drafter has
    none: it uses its target's)."""
    missing = missing + broken_weights(folder)
    needs_tokenizer = not missing and not is_dflash_folder(folder)  # a partial download lacks it anyway
    tokenizer = missing_tokenizer(folder) if needs_tokenizer else None
    return missing + ([tokenizer] if tokenizer else [])


def describe_folder(
    folder: Path,
    name: str | None = None,
    source: str = "folder",
    repo_id: str | None = None,
    missing: list[str] | None = None,
    vocab: VocabHashCache | None = None,
    extra_bytes: int = 0,
) -> LocalModel:
    """A LocalModel for one folder; vocab=None skips the (slow) tokenizer load."""
    folder = Path(folder)
    config = read_config(folder)
    missing = list(missing) if missing is not None else missing_weights(folder)
    facts = facts_from_config(config) if config else None
    dflash = is_dflash_config(config)
    vocab_hash = None
    if vocab is not None and not missing and not dflash:
        try:
            vocab_hash = vocab.vocab_hash(folder)
        except HubError as exc:
            missing.append(str(exc))
    mtp: bool | None = False
    reason = DFLASH_NO_MTP
    if not dflash:
        mtp, reason = detect_mtp_head(folder) if config else (None, "no config.json")
    return LocalModel(
        name or folder.name,
        folder,
        source,
        repo_id,
        size_on_disk(folder) + extra_bytes,
        not missing,
        tuple(missing),
        facts,
        vocab_hash,
        mtp,
        reason,
        dflash,
    )


def _expected_files(repo: CachedRepo, revision: CachedRevision, cache_dir: Path) -> dict[str, int] | None:
    """{path: size} the revision should hold: our manifest, else huggingface_hub's tree cache."""
    listed = read_manifest(repo.repo_path, revision.commit_hash)
    if listed is not None:
        return listed
    try:
        return cached_repo_tree(repo.repo_id, revision.commit_hash, cache_dir)
    except Exception:  # no tree cached for this commit (e.g. downloaded by an older tool)
        return None


def _pick_revision(repo: CachedRepo) -> CachedRevision | None:
    """The revision main points at, else the newest."""
    revisions = sorted(repo.revisions, key=lambda r: r.last_modified, reverse=True)
    return next((r for r in revisions if "main" in r.refs), revisions[0] if revisions else None)


def _describe_cached(repo: CachedRepo, cache_dir: Path, vocab: VocabHashCache | None) -> LocalModel | None:
    revision = _pick_revision(repo)
    if revision is None:
        return None
    snapshot = Path(revision.snapshot_path)
    partials = list((Path(repo.repo_path) / "blobs").glob("*.incomplete"))
    expected = _expected_files(repo, revision, cache_dir)
    if expected is None:
        missing = missing_weights(snapshot)
    else:
        missing = _with_broken_weights(snapshot, sorted(p for p in expected if not (snapshot / p).is_file()))
    if partials:
        missing.append(f"{len(partials)} partly downloaded file(s)")
    return describe_folder(
        snapshot,
        repo.repo_id,
        "hf-cache",
        repo.repo_id,
        missing,
        vocab,
        extra_bytes=sum(p.stat().st_size for p in partials),
    )


def scan_hf_cache(config: HubConfig, vocab: VocabHashCache | None = None) -> list[LocalModel]:
    """Every model repo in the HF cache, complete or partial."""
    try:
        info = scan_cache_dir(config.cache_dir)
    except (CacheNotFound, ValueError):
        return []
    models = [_describe_cached(repo, config.cache_dir, vocab) for repo in info.repos if repo.repo_type == "model"]
    return sorted((m for m in models if m is not None), key=lambda m: m.name.lower())


def scan_local_models(
    config: HubConfig,
    extra_folders: Sequence[str | Path] = (),
    vocab: VocabHashCache | None = None,
    home: Path | None = None,
) -> list[LocalModel]:
    """HF cache models, LM Studio's MLX models (under home), then each user folder (a model folder,
    or a folder of model folders); each folder once."""
    models = scan_hf_cache(config, vocab)
    studio = folder_models(lmstudio_dirs(home if home is not None else Path.home()), "lm-studio")
    models += [describe_folder(m.path, m.name, "lm-studio", vocab=vocab) for m in studio]
    for folder in extra_folders:
        models += [describe_folder(m.path, m.name, "folder", vocab=vocab) for m in user_folder_models(folder)]
    return unique_by_path(models)


def user_folder_models(folder: str | Path) -> list[FoundModel]:
    """The models of a folder the user added, as `models add` counts them and `models list` lists them:
    the folder itself when it is an MLX model folder, else those up to two levels below (publisher/model)."""
    return folder_models([Path(folder).expanduser()], "folder")


def find_model(models: list[LocalModel], name: str) -> LocalModel | None:
    """The model whose repo id, name or path is name."""
    key = name.strip().lower()
    path = Path(name).expanduser()
    for model in models:
        if key in ((model.repo_id or "").lower(), model.name.lower()) or (
            path.exists() and path.resolve() == model.path.resolve()
        ):
            return model
    return None


def delete_model(model: LocalModel, config: HubConfig, confirm: bool = False) -> int:
    """Delete a model from the HF cache (needs confirm=True); returns the bytes freed.

    Folders the user added are never deleted here: they belong to the user.
    """
    if model.source != "hf-cache" or model.repo_id is None:
        raise HubError(f"{model.path} is a folder you added; remove it from the list or delete it yourself")
    if not confirm:
        raise ConfirmationRequired(
            f"deleting {model.repo_id} frees {model.size_bytes} bytes; pass confirm=True to delete it"
        )
    repo_path = model.path.parent.parent
    if repo_path.parent.resolve() != config.cache_dir.resolve():
        raise HubError(f"{model.path} is not inside the HF cache {config.cache_dir}")
    info = scan_cache_dir(config.cache_dir)
    hashes = [r.commit_hash for repo in info.repos if repo.repo_path == repo_path for r in repo.revisions]
    if hashes:
        info.delete_revisions(*hashes).execute()  # huggingface_hub's own clean-up (shared blobs too)
    shutil.rmtree(repo_path, ignore_errors=True)  # partial blobs, refs, our manifest
    return model.size_bytes
