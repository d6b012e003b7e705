"""What a suite report (tuning/suite_report.py's JSON) says, for the Suite view: the category x drafter grid of
speed against plain decoding and acceptance, the drafter each category should use, and whether Auto (the mode
that picks its drafter each round) is the one to use. Where the last report of each pair is kept. No Qt."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from specchat.engine.modes import SpecMode
from specchat.paths import AppPaths
from specchat.tuning.best_k import model_key
from specchat.tuning.suite import PLAIN

ALL = "all categories"


@dataclass(frozen=True)
class GridCell:
    """One category's figures for one cell (plain, or a drafter at a fixed K or Auto K)."""

    vs_plain: float | None  # speed over plain decoding's on the same prompts
    acceptance: float | None
    tokens_per_s: float | None
    exact: bool


@dataclass(frozen=True)
class Pick:
    """What a category should decode with: a cell label (PLAIN when no drafter beat plain decoding)."""

    category: str
    label: str
    vs_plain: float | None
    auto_best: bool  # the pick is one of Auto's cells


def report_files(paths: AppPaths, target: str, draft: str | None) -> tuple[Path, Path]:
    """The JSON and Markdown files of a pair's last suite report."""
    parts = [model_key(target), model_key(draft) if draft else "-"]
    stem = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]
    folder = paths.data_dir / "suite"
    return folder / f"{stem}.json", folder / f"{stem}.md"


def saved_words(file: Path) -> str:
    """'Saved 2026-12-02 11:40: /path/to/report.json (and .md)'."""
    try:
        when = datetime.fromtimestamp(file.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
    except OSError:
        return f"Saved as {file} (and .md)"
    return f"Saved {when}: {file} (and .md)"


def load_report(file: Path) -> dict[str, Any] | None:
    """A saved suite report, None when there is none or it does not read."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("categories"), list) else None


def labels(report: dict[str, Any]) -> list[str]:
    """Every cell label of the report, plain first, in the order the suite ran them."""
    found = [c["label"] for c in report.get("overall", [])]
    for category in report.get("categories", []):
        found += [c["label"] for c in category["cells"]]
    return list(dict.fromkeys(found))


def grid(report: dict[str, Any]) -> dict[str, dict[str, GridCell]]:
    """Per category (and ALL, over every category), per cell label, its figures."""
    rows = [(c["name"], c["cells"]) for c in report.get("categories", [])] + [(ALL, report.get("overall", []))]
    return {name: {c["label"]: _cell(c) for c in cells} for name, cells in rows}


def _cell(data: dict[str, Any]) -> GridCell:
    return GridCell(data.get("vs_plain"), data.get("acceptance"), data.get("tokens_per_s"), bool(data.get("exact")))


def is_auto(label: str) -> bool:
    """True for a cell of the Auto mode (it picks prompt lookup or the model drafter each round)."""
    return label.split(" ", 1)[0] == SpecMode.AUTO


def pick(category: str, cells: dict[str, GridCell]) -> Pick:
    """The fastest exact drafter of a category when it beats plain decoding, else plain decoding."""
    usable = [(c.vs_plain, label) for label, c in cells.items() if label != PLAIN and c.exact and c.vs_plain]
    if not usable:
        return Pick(category, PLAIN, None, False)
    best, label = max(usable)
    if best <= 1.0:
        return Pick(category, PLAIN, best, False)
    return Pick(category, label, best, is_auto(label))


def picks(report: dict[str, Any]) -> list[Pick]:
    """Each category's pick, then the pick over all categories."""
    return [pick(name, cells) for name, cells in grid(report).items()]


def recommendation(report: dict[str, Any]) -> str:
    """One paragraph: the drafter to use per category, and whether Auto is the best choice overall."""
    chosen = picks(report)
    if not chosen:
        return "The report has no categories."
    *categories, overall = chosen
    per_category = "; ".join(f"{p.category}: {_pick_words(p)}" for p in categories)
    text = f"Use per category: {per_category}. Over all categories: {_pick_words(overall)}."
    return text + " " + _auto_words(report, categories, overall)


def _pick_words(p: Pick) -> str:
    if p.label == PLAIN:
        return "plain decoding (no drafter beat it)" if p.vs_plain is not None else "plain decoding"
    return f"{p.label} ({p.vs_plain:.2f}× plain)"


def _auto_words(report: dict[str, Any], categories: list[Pick], overall: Pick) -> str:
    """Whether Auto is best: how many categories it wins, and how it compares over all of them."""
    why_not = report.get("unavailable", {}).get(SpecMode.AUTO)
    if why_not:
        return f"Auto was not run: {why_not}."
    auto_cells = {label: c for label, c in grid(report)[ALL].items() if is_auto(label) and c.vs_plain}
    if not auto_cells:
        return "Auto has no figures in this report."
    wins = sum(p.auto_best for p in categories)
    label, cell = max(auto_cells.items(), key=lambda item: item[1].vs_plain or 0.0)
    if overall.auto_best:
        return f"Auto is the best choice overall ({label}), and the fastest in {wins} of {len(categories)} categories."
    return (
        f"Auto is not the best choice overall: its best, {label}, reaches {cell.vs_plain:.2f}× plain; "
        f"it is the fastest in {wins} of {len(categories)} categories."
    )
