"""The curated catalog of MLX Qwen models (specchat/assets/catalog.json, shipped in the package) and its schema check."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from specchat.resources import read_text

from .errors import HubError

CATALOG_RESOURCE = "catalog.json"  # read with specchat.resources from inside the installed package
ROLES = ("target", "draft", "both", "dflash")  # dflash: a DFlash drafter, paired with its one target
ARCHITECTURES = ("dense", "hybrid")
PAIR_MODES = ("draft", "mtp", "dflash")
_MODEL_FIELDS: dict[str, type | tuple[type, ...]] = {
    "repo_id": str,
    "family": str,
    "params": str,
    "role": str,
    "architecture": str,
    "mtp": bool,
    "quantization": str,
    "approx_size_gb": (int, float),
    "context_length": int,
}


@dataclass(frozen=True)
class CatalogModel:
    """One curated model."""

    repo_id: str
    family: str
    params: str
    role: str
    architecture: str
    mtp: bool
    mtp_depth: int | None
    quantization: str
    approx_size_gb: float
    context_length: int
    notes: str = ""
    base_model: str = ""  # the original checkpoint it was converted from (where an MTP head can be found)

    @property
    def can_target(self) -> bool:
        """Offered as a target."""
        return self.role in ("target", "both")

    @property
    def can_draft(self) -> bool:
        """Offered as a draft."""
        return self.role in ("draft", "both")

    @property
    def is_dflash(self) -> bool:
        """A DFlash drafter: drafts only for the target it was trained on, with that target's tokenizer."""
        return self.role == "dflash"


@dataclass(frozen=True)
class RecommendedPair:
    """A target with its draft, its DFlash drafter (mode dflash), or its MTP head (draft None); and the K known
    to work (for dflash: the tokens one block drafts, block_size - 1)."""

    target: str
    draft: str | None
    mode: str
    k: int


@dataclass(frozen=True)
class Catalog:
    """All curated models and recommended pairs."""

    models: tuple[CatalogModel, ...]
    pairs: tuple[RecommendedPair, ...]

    def get(self, repo_id: str) -> CatalogModel | None:
        """The entry for repo_id (case-insensitive), or None."""
        key = repo_id.lower()
        return next((m for m in self.models if m.repo_id.lower() == key), None)

    def pairs_for(self, target: str) -> list[RecommendedPair]:
        """Recommended pairs whose target is repo_id."""
        return [p for p in self.pairs if p.target.lower() == target.lower()]

    def dflash_for(self, target: str) -> CatalogModel | None:
        """The DFlash drafter the catalog pairs with this target, or None."""
        pair = next((p for p in self.pairs_for(target) if p.mode == "dflash" and p.draft), None)
        return self.get(pair.draft) if pair is not None and pair.draft else None

    def dflash_target(self, drafter: str) -> str | None:
        """The target a catalog DFlash drafter drafts for, or None."""
        key = drafter.lower()
        return next((p.target for p in self.pairs if p.mode == "dflash" and (p.draft or "").lower() == key), None)


def read_catalog_text() -> str:
    """The shipped catalog.json as text."""
    return read_text(CATALOG_RESOURCE)


def validate_catalog(data: object) -> list[str]:
    """Every problem with a parsed catalog.json, as readable lines (empty when valid)."""
    if not isinstance(data, dict):
        return ["the catalog must be a JSON object"]
    problems = []
    models = data.get("models")
    if not isinstance(models, list) or not models:
        return ["'models' must be a non-empty list"]
    roles: dict[str, object] = {}  # repo_id -> role
    for i, model in enumerate(models):
        problems += [f"models[{i}]: {p}" for p in _model_problems(model)]
        if isinstance(model, dict) and isinstance(model.get("repo_id"), str):
            if model["repo_id"] in roles:
                problems.append(f"models[{i}]: duplicate repo_id {model['repo_id']}")
            roles[model["repo_id"]] = model.get("role")
    for i, pair in enumerate(data.get("recommended_pairs") or []):
        problems += [f"recommended_pairs[{i}]: {p}" for p in _pair_problems(pair, roles)]
    return problems


def _is_a(value: object, kind: type | tuple[type, ...]) -> bool:
    """isinstance, except that True/False only count as bool (not as numbers)."""
    return isinstance(value, kind) and (isinstance(value, bool) == (kind is bool))


def _model_problems(model: object) -> list[str]:
    if not isinstance(model, dict):
        return ["must be an object"]
    problems = [
        f"'{name}' must be {getattr(kind, '__name__', 'a number')}"
        for name, kind in _MODEL_FIELDS.items()
        if not _is_a(model.get(name), kind)
    ]
    if model.get("role") not in ROLES:
        problems.append(f"role {model.get('role')!r} is not one of {ROLES}")
    if model.get("architecture") not in ARCHITECTURES:
        problems.append(f"architecture {model.get('architecture')!r} is not one of {ARCHITECTURES}")
    if "/" not in str(model.get("repo_id", "")):
        problems.append("repo_id must look like org/name")
    depth = model.get("mtp_depth")
    if model.get("mtp") is True and not (isinstance(depth, int) and depth > 0):
        problems.append("a model with mtp needs a positive mtp_depth")
    if "base_model" in model and "/" not in str(model["base_model"]):
        problems.append("base_model must look like org/name")
    if isinstance(model.get("approx_size_gb"), (int, float)) and model["approx_size_gb"] <= 0:
        problems.append("approx_size_gb must be positive")
    return problems


def _pair_problems(pair: object, roles: dict[str, object]) -> list[str]:
    if not isinstance(pair, dict):
        return ["must be an object"]
    problems = []
    target, draft, mode = pair.get("target"), pair.get("draft"), pair.get("mode")
    if not (isinstance(target, str) and target in roles):
        problems.append(f"target {target!r} is not in models")
    elif roles[target] == "dflash":
        problems.append(f"target {target!r} is a DFlash drafter, not a model to chat with")
    if mode not in PAIR_MODES:
        problems.append(f"mode {mode!r} is not one of {PAIR_MODES}")
    if mode in ("draft", "dflash") and not (isinstance(draft, str) and draft in roles):
        problems.append(f"draft {draft!r} is not in models")
    elif mode in ("draft", "dflash") and isinstance(draft, str) and (roles[draft] == "dflash") != (mode == "dflash"):
        kind = "a DFlash drafter" if mode == "dflash" else "a draft model, not a DFlash drafter"
        problems.append(f"a {mode} pair's draft must be {kind}: {draft!r} has role {roles[draft]!r}")
    if pair.get("mode") == "mtp" and pair.get("draft") is not None:
        problems.append("an mtp pair has no draft (draft must be null)")
    k = pair.get("k")
    if not (isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= 16):
        problems.append(f"k must be a whole number from 1 to 16, got {k!r}")
    return problems


def load_catalog(path: Path | None = None) -> Catalog:
    """Read and check catalog.json (the shipped one unless path is given); HubError naming the problems."""
    where = str(path) if path is not None else f"specchat/assets/{CATALOG_RESOURCE}"
    try:
        data = json.loads(read_catalog_text() if path is None else Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise HubError(f"cannot read the model catalog {where}: {exc}") from exc
    problems = validate_catalog(data)
    if problems:
        raise HubError(f"invalid model catalog {where}: " + "; ".join(problems[:5]))
    models = tuple(
        CatalogModel(
            **{k: m.get(k) for k in _MODEL_FIELDS},
            mtp_depth=m.get("mtp_depth"),
            notes=m.get("notes", ""),
            base_model=m.get("base_model", ""),
        )
        for m in data["models"]
    )
    pairs = tuple(
        RecommendedPair(p["target"], p.get("draft"), p["mode"], p["k"]) for p in data.get("recommended_pairs") or []
    )
    return Catalog(models, pairs)
