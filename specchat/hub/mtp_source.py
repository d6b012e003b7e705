"""Which hub repo a local model was converted from: --from, the card's base_model, the config, the catalog."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .catalog import Catalog
from .model_facts import read_config
from .repo_ids import BadRepoIdError, parse_repo_id

CONFIG_KEYS = ("base_model", "_name_or_path")
_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*(\n|\Z)", re.S)


@dataclass(frozen=True)
class Original:
    """The original checkpoint's repo and where we learnt it."""

    repo_id: str
    found_in: str  # "--from", "README.md base_model", "config.json ...", "the catalog"


def card_base_models(folder: Path) -> list[str]:
    """base_model entries of the README.md YAML front matter (a string or a list), in order."""
    try:
        text = (Path(folder) / "README.md").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    match = _FRONT_MATTER.match(text)
    if match is None:
        return []
    found: list[str] = []
    lines = match.group(1).splitlines()
    for i, line in enumerate(lines):
        key, _, value = line.partition(":")
        if key.strip() != "base_model":
            continue
        if value.strip():
            found.append(_unquote(value))
        for item in lines[i + 1 :]:
            if not item.lstrip().startswith("- "):
                break
            found.append(_unquote(item.lstrip()[2:]))
    return [f for f in found if f]


def _unquote(value: str) -> str:
    return value.strip().strip("'\"").strip()


def local_repo_id(folder: Path) -> str | None:
    """org/name of a HF-cache snapshot folder (models--org--name/snapshots/<commit>), else None."""
    parts = Path(folder).resolve().parts
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        return parts[-3].removeprefix("models--").replace("--", "/", 1)
    return None


def _valid(text: str) -> str | None:
    try:
        return parse_repo_id(text)
    except BadRepoIdError:
        return None


def find_original(folder: Path, explicit: str | None = None, catalog: Catalog | None = None) -> Original | None:
    """The original repo of a local conversion, or None when nothing names one."""
    if explicit:
        return Original(parse_repo_id(explicit), "--from")
    for name in card_base_models(folder):
        if repo := _valid(name):
            return Original(repo, "README.md base_model")
    config = read_config(folder)
    for key in CONFIG_KEYS:
        value = config.get(key)
        if isinstance(value, str) and not Path(value).is_absolute() and (repo := _valid(value)):
            return Original(repo, f"config.json {key}")
    own = local_repo_id(folder)
    entry = catalog.get(own) if catalog is not None and own else None
    base = getattr(entry, "base_model", "") if entry is not None else ""
    return Original(base, "the catalog") if base else None
