"""The best draft length K (or auto K) per prompt type, saved per (target, draft | mtp) pair for the chat's default."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from specchat.engine.config import LIMITS
from specchat.jsonfile import write_json_atomic
from specchat.paths import AppPaths

from .sweep_results import AUTO, OFF, Choice

if TYPE_CHECKING:
    from .sweep_results import PromptResult, SweepResult

SCHEMA_VERSION = 1
MTP = "mtp"
# A saved best K of OFF (0): no K beat plain decoding, so speculation is off for that prompt type;
# AUTO ("auto"): auto K beat plain decoding and every fixed K, so the chat drafts with K auto.


def _is_off(k: object) -> bool:
    """A saved K of 0: speculation off (an int, not a bool)."""
    return isinstance(k, int) and not isinstance(k, bool) and k == OFF


def _is_choice(k: object) -> bool:
    """A K in today's limit, OFF or AUTO."""
    return k == AUTO or _is_off(k) or LIMITS["num_draft_tokens"].accepts(k)


def model_key(folder: str | Path) -> str:
    """A model folder as an absolute, resolved path (so ~ and symlinks name one pair)."""
    return str(Path(folder).expanduser().resolve())


def pair_key(target: str | Path, drafter: str | Path) -> str:
    """The key of a (target, draft folder | "mtp") pair in the tuning file."""
    draft = MTP if str(drafter) == MTP else model_key(drafter)
    return f"{model_key(target)}::{draft}"


def load_tuning(paths: AppPaths) -> dict[str, dict]:
    """Every saved pair's entry; an absent or unreadable file gives {}."""
    try:
        data = json.loads(paths.tuning_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    pairs = data.get("pairs") if isinstance(data, dict) else None
    return pairs if isinstance(pairs, dict) else {}


def tuning_entry(paths: AppPaths, target: str | Path, drafter: str | Path) -> dict | None:
    """The saved entry of one pair (best_k, speedups, tag, saved_at), or None."""
    entry = load_tuning(paths).get(pair_key(target, drafter))
    return entry if isinstance(entry, dict) else None


def best_choices(paths: AppPaths, target: str | Path, drafter: str | Path) -> dict[str, Choice] | None:
    """The saved best choice per prompt type for this pair (a K, OFF = 0, or AUTO), or None when never swept."""
    entry = tuning_entry(paths, target, drafter)
    raw = entry.get("best_k") if entry else None
    if not isinstance(raw, dict):
        return None
    found = {name: k for name, k in raw.items() if _is_choice(k)}
    return found or None  # a K outside today's limit (saved by an older version) is left out


def best_k(paths: AppPaths, target: str | Path, drafter: str | Path) -> dict[str, int] | None:
    """best_choices() without the AUTO ones: for readers that take a whole-number K only."""
    found = {name: k for name, k in (best_choices(paths, target, drafter) or {}).items() if isinstance(k, int)}
    return found or None


def save_best_k(
    paths: AppPaths,
    target: str | Path,
    drafter: str | Path,
    best: dict[str, Choice],
    speedup_pct: dict[str, float | None] | None = None,
    tag: str | None = None,
) -> Path:
    """Save (replace) the best K (or AUTO) per prompt type of one pair; other pairs are kept. Returns the file."""
    if not best:
        raise ValueError("no best K to save: the sweep had no usable cell")
    for name, k in best.items():
        if not _is_choice(k):
            raise ValueError(
                f"best K for {name!r} must be {LIMITS['num_draft_tokens'].allowed()}, "
                f"or {OFF} for Off, or {AUTO!r} for auto K, got {k!r}"
            )
    pairs = load_tuning(paths)
    pairs[pair_key(target, drafter)] = {
        "target": model_key(target),
        "drafter": MTP if str(drafter) == MTP else model_key(drafter),
        "best_k": dict(best),
        "speedup_pct": dict(speedup_pct or {}),
        "tag": tag,
        "saved_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    write_json_atomic(paths.tuning_file, {"schema_version": SCHEMA_VERSION, "pairs": pairs})
    return paths.tuning_file


def save_sweep(paths: AppPaths, result: SweepResult) -> Path | None:
    """Save a SweepResult's best K (or AUTO) per prompt for its pair; None when no cell was usable."""
    if not result.target or not result.drafter:
        raise ValueError("the sweep result does not name its target and drafter folders")
    best = result.best_k()
    if not best:
        return None
    speedups = {p.name: _best_speedup(p, best[p.name]) for p in result.prompts if p.name in best}
    return save_best_k(paths, result.target, result.drafter, best, speedups, result.tag)


def _best_speedup(prompt: PromptResult, choice: Choice) -> float | None:
    """The speedup of a prompt's choice: 0 for Off, else its cell's (auto K's, or the fastest K's)."""
    if choice == OFF:
        return 0.0
    cell = prompt.dynamic if choice == AUTO else prompt.best_cell()
    return cell.speedup_pct if cell is not None else None
