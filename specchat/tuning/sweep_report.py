"""A sweep as Markdown tables (one per prompt, rows K and auto K) and as JSON with every raw run, read back too."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from specchat.jsonfile import write_text_atomic

from .sweep_results import AUTO, DYNAMIC_LABEL, OFF, CellResult, Choice, PromptResult, RunRecord, SweepResult
from .sweep_stats import BEST_RULE, DYNAMIC_RULE, cv_text

JSON_SCHEMA_VERSION = 1
TABLE_HEADER = (
    "| K | tok/s | speedup | acceptance | accepted/round | peak GB | CV | notes |\n"
    "|---|---:|---:|---:|---:|---:|---:|---|"
)
DASH = "—"
AUTO_LOSES = "it does not beat both plain decoding and the fastest K beyond the noise"


def _gb(n_bytes: int) -> str:
    return f"{n_bytes / 1e9:.2f}"


def _pct(value: float | None, signed: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return DASH
    return f"{value:+.1f}%" if signed else f"{value:.1f}%"


def cell_notes(cell: CellResult) -> str:
    """Flags of a cell in words: output differs, noisy, power changed."""
    notes = []
    if cell.identical is False:
        where = f" at token {cell.first_mismatch}" if cell.first_mismatch is not None else ""
        notes.append(f"output differs from baseline{where}: speed not used")
    if cell.noisy:
        notes.append("noisy")
    if cell.power_changed:
        notes.append(f"power source changed ({', '.join(dict.fromkeys(cell.power_sources))})")
    return "; ".join(notes)


def cell_row(cell: CellResult) -> str:
    """One Markdown table row."""
    speed = DASH if cell.median_tokens_per_s is None else f"{cell.median_tokens_per_s:.1f}"
    peak = _gb(cell.peak_memory_bytes)
    if cell.k is not None:
        peak += f" ({cell.peak_memory_delta_bytes / 1e9:+.2f})"
    per_round = DASH if cell.mean_accepted_per_round is None else f"{cell.mean_accepted_per_round:.2f}"
    acceptance = DASH if cell.acceptance_rate is None else _pct(cell.acceptance_rate * 100)
    cells = (
        cell.label,
        speed,
        _pct(cell.speedup_pct, signed=True),
        acceptance,
        per_round,
        peak,
        cv_text(cell.cv),
        cell_notes(cell),
    )
    return "| " + " | ".join(cells) + " |"


def prompt_table(prompt: PromptResult) -> str:
    """A prompt's section: heading, table, and its best K."""
    lines = [f"### {prompt.name} ({prompt.prompt_tokens} prompt tokens)", "", TABLE_HEADER]
    lines += [cell_row(c) for c in prompt.cells]
    choice, fastest, auto = prompt.best_choice(), prompt.best_cell(), prompt.dynamic
    if choice == AUTO and auto is not None:
        lines += ["", _auto_best(auto, fastest)]
    elif choice is None or fastest is None:  # a fixed choice is only made with a fastest cell
        lines += ["", "Best K: none (no K cell, or no plain-decoding cell, has a usable speed)"]
    elif choice == OFF:
        lines += [
            "",
            f"Best: **Off** (plain decoding): the fastest K, {fastest.k} "
            f"({_pct(fastest.speedup_pct, signed=True)} vs baseline), does not beat it beyond the noise",
        ]
    else:
        lines += [
            "",
            f"Best K: **{fastest.k}** ({fastest.median_tokens_per_s:.1f} tok/s, "
            f"{_pct(fastest.speedup_pct, signed=True)} vs baseline)",
        ]
    if auto is not None and choice != AUTO:
        lines.append(f"{DYNAMIC_LABEL}: {_auto_speed(auto)}; {AUTO_LOSES}")
    return "\n".join(lines)


def _auto_speed(auto: CellResult) -> str:
    if auto.median_tokens_per_s is None:
        return "output differs from baseline, speed not used"
    return f"{auto.median_tokens_per_s:.1f} tok/s, {_pct(auto.speedup_pct, signed=True)} vs baseline"


def _auto_best(auto: CellResult, fastest: CellResult | None) -> str:
    """The best line of a prompt where auto K won."""
    versus = f"; faster than the fastest K, {fastest.k}, beyond the noise" if fastest is not None else ""
    return f"Best: **{DYNAMIC_LABEL}** ({_auto_speed(auto)}{versus})"


def choice_text(k: Choice) -> str:
    """A best choice in words: 'K=3', 'auto K', or 'Off' (speculation off)."""
    if k == AUTO:
        return "auto K"
    return "Off" if k == OFF else f"K={k}"


def _header(result: SweepResult) -> list[str]:
    m, s, p = result.machine, result.settings, result.power_at_start
    title = f"## Sweep: {Path(result.target).name or result.target} + {_drafter_name(result.drafter, result.mode)}"
    if result.tag:
        title += f" [{result.tag}]"
    versions = ", ".join(f"{name} {m.get(name, '?')}" for name in ("mlx", "mlx-lm", "mlx-optiq"))
    return (
        [
            title,
            "",
            f"- Machine: {m.get('chip', '?')}, {m.get('memory_total', '?')}, {m.get('os', '?')}; {versions}",
            f"- Power at start: {p.get('source', '?')} ({p.get('detail', '')})",
            f"- Mode {result.mode}; {s['reps']} reps after {s['warmup']} warmup; max tokens {s['max_tokens']}; "
            f"temperature {s['temperature']:g}; started {result.started_at}",
            "- tok/s is the median decode speed; CV is 1.4826 x MAD / median (noisy above 5%; n/a below 3 reps)"
            + ("; identity gate on (temperature 0)" if s["temperature"] == 0 else "; identity gate off"),
            f"- Best: {BEST_RULE}; {DYNAMIC_RULE}",
        ]
        + _dynamic_line(s)
        + (["- **Cancelled**: the tables are partial"] if result.cancelled else [])
        + (["- **In progress**: the cells measured so far"] if result.partial else [])
    )


def _dynamic_line(settings: dict) -> list[str]:
    """The header line about the auto K cell, when the sweep ran one."""
    cap = settings.get("auto_max_k")
    if not settings.get("dynamic") or cap is None:
        return []
    return [
        f"- {DYNAMIC_LABEL}: each round drafts until the drafter is unsure, at most {cap} tokens (the engine's default max)"
    ]


def _drafter_name(drafter: str, mode: str = "") -> str:
    if drafter == "mtp":
        return "MTP head"
    name = Path(drafter).name or drafter
    return f"DFlash {name}" if mode == "dflash" else name


def to_markdown(result: SweepResult) -> str:
    """The whole sweep as Markdown: a header, one table per prompt, the best K per prompt."""
    parts = ["\n".join(_header(result))] + [prompt_table(p) for p in result.prompts]
    best = result.best_k()
    parts.append(
        "Best K per prompt type: "
        + (", ".join(f"{n} **{'Off' if k == OFF else k}**" for n, k in best.items()) or "none")
    )
    return "\n\n".join(parts) + "\n"


def _finite(value: object) -> object:
    """JSON has no Infinity / NaN: map them to None, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def to_json(result: SweepResult) -> dict[str, object]:
    """The whole sweep as a JSON-ready dict: every cell's summary and every raw run."""
    data = asdict(result)
    data["schema_version"] = JSON_SCHEMA_VERSION
    data["best_k"] = result.best_k()
    return {key: _finite(value) for key, value in data.items()}


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """The keys of data that cls has fields for (a newer file's extra keys are left out)."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def _cell(data: dict[str, Any]) -> CellResult:
    runs = {key: tuple(RunRecord(**_known(RunRecord, r)) for r in data.get(key, ())) for key in ("reps", "warmups")}
    sources = tuple(data.get("power_sources", ()))
    return CellResult(**{**_known(CellResult, data), **runs, "power_sources": sources})


def _prompt(data: dict[str, Any]) -> PromptResult:
    cells = tuple(_cell(c) for c in data.get("cells", ()))
    return PromptResult(**{**_known(PromptResult, data), "cells": cells})


def from_json(data: dict[str, Any]) -> SweepResult:
    """A SweepResult from to_json's dict; older files (no auto K cell, no max_k) load too."""
    prompts = tuple(_prompt(p) for p in data.get("prompts", ()))
    return SweepResult(**{**_known(SweepResult, data), "prompts": prompts})


def read_json(path: str | Path) -> SweepResult:
    """Read a sweep written by write_json (any schema version so far)."""
    return from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def write_json(result: SweepResult, path: str | Path) -> Path:
    """Write to_json(result) to path, pretty-printed (atomically)."""
    return write_text_atomic(Path(path), json.dumps(to_json(result), indent=2) + "\n")


def write_markdown(result: SweepResult, path: str | Path) -> Path:
    """Write to_markdown(result) to path (atomically)."""
    return write_text_atomic(Path(path), to_markdown(result))
