"""Auto K vs the best fixed K and vs plain decoding, side by side in one run.

Two situations stand for the published ones: a draft that agrees with the target
("predictable" text: structured prompt, shallow draft made of the target's first layers) and
a draft that does not ("open" text: an unrelated draft, where speculation can only lose).
Also prompt lookup on text that repeats itself. Then the same three on a real model (SmolLM2-135M
from shared/models, chat template applied) with an early-exit draft made of its first 8 layers.
Greedy output is asserted identical everywhere.
Run: python bench/auto_k.py [--runs 5] [--tokens 96] [--real-tokens 64] [--ks 1 2 4 8] [--cases fixture real]
     [--real-prompts structured open lookup]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import mlx.core as mx
from common import REAL_MODEL, build_cheap_draft_pair, build_model, chat_ids, first_layers_copy, median

from specchat.engine import Engine, GenerationConfig
from specchat.tuning.sweep_prompts import OPEN, STRUCTURED

FIXED_K = (1, 2, 4, 8)


def timed(engine: Engine, ids, mode: str, k, n: int):
    """(tokens, decode tok/s, mean K) of one generation from empty caches; auto-K state is kept."""
    engine.reset()
    result = engine.generate(ids, GenerationConfig(mode=mode, num_draft_tokens=k, max_tokens=n))
    return result.tokens, result.stats.decode_tokens_per_s, result.stats.mean_k


def compare(engine: Engine, ids, mode: str, ks, runs: int, n: int) -> dict:
    """Median tok/s of plain decoding, each fixed K in ks and auto, the cell order rotating each run."""
    cells = [("baseline", 1)] + [(mode, k) for k in ks] + [(mode, "auto")]
    speeds = {cell: [] for cell in cells}
    reference = timed(engine, ids, "baseline", 1, n)[0]
    mean_k = 0.0
    for cell in cells:  # warm up, and let auto learn this pair's costs
        timed(engine, ids, *cell, n)
    for run in range(runs):
        for cell in cells[run % len(cells) :] + cells[: run % len(cells)]:  # rotate: no cell always goes first
            tokens, tps, k_used = timed(engine, ids, *cell, n)
            assert tokens == reference, f"{cell} output differs from plain decoding"
            speeds[cell].append(tps)
            mean_k = k_used if cell[1] == "auto" else mean_k
    med = {cell: median(v) for cell, v in speeds.items()}
    best_fixed = max(ks, key=lambda k: med[(mode, k)])
    return {
        "plain": med[("baseline", 1)],
        "best_k": best_fixed,
        "best": med[(mode, best_fixed)],
        "auto": med[(mode, "auto")],
        "mean_k": mean_k,
    }


REPEAT = (
    "Copy this list exactly, one item per line, and add nothing: apples, pears, plums, cherries, "
    "apricots, peaches, grapes, melons, lemons, limes, oranges, figs, dates, kiwis, mangoes."
)

REAL_PROMPTS = {
    "structured": ("SmolLM2, structured prompt, early-exit draft", "draft", STRUCTURED),
    "open": ("SmolLM2, open prompt, early-exit draft", "draft", OPEN),
    "lookup": ("SmolLM2, prompt lookup, a list to copy", "lookup", REPEAT),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--real-tokens", type=int, default=64)
    parser.add_argument("--real-draft-layers", type=int, default=8)
    parser.add_argument("--ks", type=int, nargs="+", default=list(FIXED_K), help="the fixed K to compare with")
    parser.add_argument("--cases", nargs="+", choices=["fixture", "real"], default=["fixture", "real"])
    parser.add_argument("--real-prompts", nargs="+", choices=list(REAL_PROMPTS), default=list(REAL_PROMPTS))
    args = parser.parse_args()
    if "fixture" in args.cases:
        print(f"fixtures: dense target 16 layers (hidden 384), draft 2 layers; {args.tokens} tokens")
    if "real" in args.cases:
        print(
            f"real: {REAL_MODEL.name}, draft = its first {args.real_draft_layers} of 30 layers, "
            f"{args.real_tokens} tokens"
        )
    print(f"{args.runs} runs per cell, cell order rotated each run; MLX device {mx.default_device()}")
    print(
        "| situation | plain tok/s | best fixed K | its tok/s | auto tok/s | auto mean K | auto / best fixed "
        "| auto / plain |"
    )
    print("|---|---|---|---|---|---|---|---|")
    if "fixture" in args.cases:
        _fixture_rows(args)
    if "real" in args.cases:
        _real_rows(args)


def _fixture_rows(args) -> None:
    """The three situations on fixture models built here."""
    target, agreeing = build_cheap_draft_pair("dense", hidden=384, layers=16, draft_layers=2, noise=0.02)
    unrelated = build_model(target.parent / "unrelated", "dense", seed=7, hidden=384, layers=2)
    cases = [
        ("fixture, predictable: agreeing draft, structured prompt", agreeing, "draft", STRUCTURED),
        ("fixture, open: unrelated draft, open prompt", unrelated, "draft", OPEN),
        ("fixture, prompt lookup, text that repeats", None, "lookup", "one two three four. " * 6),
    ]
    for label, draft, mode, text in cases:
        engine = Engine.load(target, draft)
        _report(label, engine, list(engine.tokenizer.encode(text)), mode, args)


def _real_rows(args) -> None:
    """The chosen prompts on the real model, its early-exit copy drafting."""
    if not (REAL_MODEL / "config.json").is_file():
        print(f"(real model not found at {REAL_MODEL}: skipped)")
        return
    folder = Path(tempfile.mkdtemp(prefix="specchat-bench-early-exit-"))
    early = first_layers_copy(REAL_MODEL, args.real_draft_layers, folder)
    for name in args.real_prompts:
        label, mode, text = REAL_PROMPTS[name]
        engine = Engine.load(REAL_MODEL, early if mode == "draft" else None)
        _report(label, engine, list(chat_ids(engine, text)), mode, args, real=True)


def _report(label: str, engine: Engine, ids: list[int], mode: str, args, real: bool = False) -> None:
    r = compare(engine, ids, mode, args.ks, args.runs, args.real_tokens if real else args.tokens)
    print(
        f"| {label} | {r['plain']:.1f} | {r['best_k']} | {r['best']:.1f} | {r['auto']:.1f} | "
        f"{r['mean_k']:.1f} | {r['auto'] / r['best']:.2f} | {r['auto'] / r['plain']:.2f} |",
        flush=True,
    )


if __name__ == "__main__":
    main()
