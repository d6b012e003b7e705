"""A sweep's cells as CSV rows (one row per prompt and K, k "auto" for auto K), for spreadsheets; the file names
its exports are offered under."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

from specchat.tuning.sweep_report import cell_notes
from specchat.tuning.sweep_results import CellResult, SweepResult, is_best

CSV_COLUMNS = (
    "prompt",
    "k",
    "tokens_per_s",
    "measured_tokens_per_s",
    "speedup_pct",
    "acceptance_rate",
    "mean_accepted_per_round",
    "cv",
    "noisy",
    "identical",
    "first_mismatch",
    "peak_memory_bytes",
    "peak_memory_delta_bytes",
    "power_changed",
    "reps",
    "best",
    "notes",
    "max_k",
)


def _value(value):
    """CSV text of a value: blank for None and non-finite numbers."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return value


def cell_record(prompt: str, cell: CellResult, best: bool) -> dict:
    """One CSV row as a dict keyed by CSV_COLUMNS."""
    return {
        "prompt": prompt,
        "k": "baseline" if cell.k is None else cell.k,
        "tokens_per_s": cell.median_tokens_per_s,
        "measured_tokens_per_s": cell.measured_median_tokens_per_s,
        "speedup_pct": cell.speedup_pct,
        "acceptance_rate": cell.acceptance_rate,
        "mean_accepted_per_round": cell.mean_accepted_per_round,
        "cv": cell.cv,
        "noisy": cell.noisy,
        "identical": cell.identical,
        "first_mismatch": cell.first_mismatch,
        "peak_memory_bytes": cell.peak_memory_bytes,
        "peak_memory_delta_bytes": cell.peak_memory_delta_bytes,
        "power_changed": cell.power_changed,
        "reps": len(cell.reps),
        "best": best,
        "notes": cell_notes(cell),
        "max_k": cell.max_k,  # auto K only: the most tokens a round may draft
    }


def sweep_records(result: SweepResult) -> list[dict]:
    """Every cell of every prompt as a row dict, baseline first within each prompt."""
    best = result.best_k()
    return [cell_record(p.name, c, is_best(c, best.get(p.name))) for p in result.prompts for c in p.cells]


def write_csv(result: SweepResult, path: str | Path) -> Path:
    """Write the sweep's cells to a CSV file with a header row."""
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for record in sweep_records(result):
            writer.writerow({k: _value(v) for k, v in record.items()})
    return path


def export_name(result: SweepResult | None, suffix: str) -> str:
    """A file name that says what was swept and when: 'sweep Qwen3-8B draft 2026-12-01.csv'."""
    if result is None:
        return f"sweep.{suffix}"
    parts = ["sweep", Path(result.target).name, result.mode, result.started_at[:10]]
    stem = " ".join(part for part in parts if part)
    return re.sub(r"[^\w\-. ]+", "", stem).strip() + f".{suffix}"
