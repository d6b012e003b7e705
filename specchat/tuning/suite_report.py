"""The suite's report: per category and cell, speed against plain decoding, tokens per round and acceptance
per draft position, the exactness check's errors, and where each category's prompts come from. Markdown and JSON."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from specchat.jsonfile import write_text_atomic

from .suite import PLAIN, SuiteRun, Tally

SCHEMA_VERSION = 1
DASH = "—"
POSITIONS = 8  # acceptance columns shown in Markdown (the JSON keeps every position)
TABLE_HEADER = (
    "| cell | K | tokens | tok/s | x plain | tokens/round | acceptance | accepted given the ones before, by position | exact |\n"
    "|---|---:|---:|---:|---:|---:|---:|---|---|"
)


def _ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


def cell_summary(t: Tally, plain: Tally | None) -> dict[str, Any]:
    """A cell's figures: speed (tokens over decode seconds) and its ratio to plain's, rounds, acceptance."""
    speed = _ratio(t.tokens, t.decode_s)
    plain_speed = _ratio(plain.tokens, plain.decode_s) if plain is not None else None
    return {
        **asdict(t),
        "tokens_per_s": speed,
        "vs_plain": None if t.label == PLAIN or speed is None or not plain_speed else speed / plain_speed,
        "tokens_per_round": _ratio(t.round_tokens, t.drafting_rounds),
        "acceptance": _ratio(t.accepted, t.drafted),
        "acceptance_by_position": [k / n if n else None for k, n in zip(t.kept, t.tried)],
        "exact": t.mismatches == 0 and t.failures == 0,
    }


def _merged(tallies: list[Tally]) -> Tally:
    """One Tally that adds several up (a cell over every category)."""
    out = Tally(tallies[0].label, tallies[0].mode)
    for t in tallies:
        for name in ("generations", "tokens", "decode_s", "rounds", "drafting_rounds", "round_tokens"):
            setattr(out, name, getattr(out, name) + getattr(t, name))
        out.drafted += t.drafted
        out.accepted += t.accepted
        out.mismatches += t.mismatches
        out.failures += t.failures
        out.ks = sorted({*out.ks, *t.ks})
        for name, n in t.by_drafter.items():
            out.by_drafter[name] = out.by_drafter.get(name, 0) + n
        for i, (n, k) in enumerate(zip(t.tried, t.kept)):
            if i == len(out.tried):
                out.tried.append(0)
                out.kept.append(0)
            out.tried[i] += n
            out.kept[i] += k
    return out


def _cells(tallies: dict[str, Tally]) -> list[dict[str, Any]]:
    plain = tallies.get(PLAIN)
    return [cell_summary(t, plain) for t in tallies.values()]


def to_json(run: SuiteRun) -> dict[str, Any]:
    """The whole run as a JSON-ready dict: per category its source, prompts and cells; overall; errors."""
    labels = list(dict.fromkeys(label for tallies in run.tallies.values() for label in tallies))
    overall = {label: _merged([t[label] for t in run.tallies.values() if label in t]) for label in labels}
    return {
        "schema_version": SCHEMA_VERSION,
        "target": run.target,
        "drafter": run.drafter,
        "python": run.python,
        "settings": run.settings,
        "unavailable": run.unavailable,
        "cancelled": run.cancelled,
        "exact": not run.errors,
        "categories": [
            {"name": name, "source": run.sources.get(name, {}), "items": run.items.get(name, []), "cells": _cells(t)}
            for name, t in run.tallies.items()
        ],
        "overall": _cells(overall),
        "errors": [asdict(e) for e in run.errors],
    }


def _num(value: float | None, fmt: str, suffix: str = "") -> str:
    return DASH if value is None else f"{value:{fmt}}{suffix}"


def cell_row(cell: dict[str, Any]) -> str:
    """One Markdown row of a cell."""
    ks = cell["ks"]
    k = "auto" if cell["label"].endswith("auto K") else (",".join(map(str, ks)) or DASH)
    by_pos = cell["acceptance_by_position"][:POSITIONS]
    positions = " ".join(_num(None if p is None else p * 100, ".0f", "%") for p in by_pos) or DASH
    failed = cell["mismatches"] + cell["failures"]
    exact = "yes" if cell["exact"] else f"**NO** ({failed} of {cell['generations'] + cell['failures']})"
    cols = [
        cell["label"],
        k,
        str(cell["tokens"]),
        _num(cell["tokens_per_s"], ".1f"),
        _num(cell["vs_plain"], ".2f", "x"),
        _num(cell["tokens_per_round"], ".2f"),
        _num(None if cell["acceptance"] is None else cell["acceptance"] * 100, ".0f", "%"),
        positions,
        exact,
    ]
    return "| " + " | ".join(cols) + " |"


def _table(title: str, cells: list[dict[str, Any]]) -> list[str]:
    return [title, "", TABLE_HEADER, *(cell_row(c) for c in cells), ""]


def to_markdown(run: SuiteRun) -> str:
    """The run as Markdown: settings, sources, one table per category and one over all, then the errors."""
    data = to_json(run)
    s = data["settings"]
    k = f"K={s['k']}" if s["k"] else f"the pair's saved best K per prompt kind, else {s['default_k']}"
    lines = [
        f"## Suite: {Path(run.target).name or run.target}" + (f" + {Path(run.drafter).name}" if run.drafter else ""),
        "",
        f"- Greedy; at most {s['max_tokens']} new tokens a turn; fixed K: {k}; every cell from empty caches"
        " and a fresh Auto K; Python " + run.python,
        "- tok/s: decode tokens over decode seconds, summed over the category; x plain: over plain decoding's",
        "- tokens/round: tokens emitted per drafting round; by position: how often draft i was accepted"
        " when drafts 1..i-1 were",
        "- Exactness: "
        + ("every output equals plain decoding's" if data["exact"] else f"**{len(run.errors)} errors** (below)"),
    ]
    lines += [f"- Not run: {mode} ({why})" for mode, why in run.unavailable.items()]
    lines += ["- **Cancelled**: the tables are partial"] if run.cancelled else []
    lines += ["", "### Sources", "", "| category | prompts | from | licence |", "|---|---:|---|---|"]
    for cat in data["categories"]:
        src = cat["source"]
        origin = src.get("origin", "?") + (f" (`{src['package']}`)" if src.get("package") else "")
        lines.append(f"| {cat['name']} | {len(cat['items'])} | {origin} | {src.get('licence', '?')} |")
    lines.append("")
    for cat in data["categories"]:
        lines += _table(f"### {cat['name']}", cat["cells"])
    lines += _table("### All categories", data["overall"])
    if run.errors:
        lines += ["### Errors", ""]
        lines += [f"- {e.category} {e.item} turn {e.turn}, {e.cell}: {e.message}" for e in run.errors]
        lines.append("")
    return "\n".join(lines)


def write_reports(run: SuiteRun, json_path: str | Path | None, markdown_path: str | Path | None) -> list[Path]:
    """Write the JSON and Markdown reports that were asked for (atomically); the paths written."""
    written = []
    if json_path:
        written.append(write_text_atomic(Path(json_path), json.dumps(to_json(run), indent=2) + "\n"))
    if markdown_path:
        written.append(write_text_atomic(Path(markdown_path), to_markdown(run)))
    return written
