"""Auto K vs the best fixed K and vs plain decoding, side by side in one run.

Two situations stand for the published ones: a draft that agrees with the target
("predictable" text: structured prompt, shallow draft made of the target's first layers) and
a draft that does not ("open" text: an unrelated draft, where speculation can only lose).
Also prompt lookup on text that repeats itself. Greedy output is asserted identical everywhere.
Run: python bench/auto_k.py [--runs 5] [--tokens 96]
"""

from __future__ import annotations

import argparse

import mlx.core as mx
from common import build_cheap_draft_pair, build_model, median

from app.engine import Engine, GenerationConfig
from app.engine.sweep_prompts import OPEN, STRUCTURED

FIXED_K = (1, 2, 4, 8)


def timed(engine: Engine, ids, mode: str, k, n: int):
    """(tokens, decode tok/s, mean K) of one generation from empty caches; auto-K state is kept."""
    engine.reset()
    result = engine.generate(ids, GenerationConfig(mode=mode, num_draft_tokens=k, max_tokens=n))
    return result.tokens, result.stats.decode_tokens_per_s, result.stats.mean_k


def compare(engine: Engine, ids, mode: str, runs: int, n: int) -> dict:
    """Median tok/s of plain decoding, each fixed K and auto, in alternating runs."""
    cells = [("baseline", 1)] + [(mode, k) for k in FIXED_K] + [(mode, "auto")]
    speeds = {cell: [] for cell in cells}
    reference = timed(engine, ids, "baseline", 1, n)[0]
    mean_k = 0.0
    for cell in cells:  # warm up, and let auto learn this pair's costs
        timed(engine, ids, *cell, n)
    for _ in range(runs):
        for cell in cells:
            tokens, tps, k_used = timed(engine, ids, *cell, n)
            assert tokens == reference, f"{cell} output differs from plain decoding"
            speeds[cell].append(tps)
            mean_k = k_used if cell[1] == "auto" else mean_k
    med = {cell: median(v) for cell, v in speeds.items()}
    best_fixed = max(FIXED_K, key=lambda k: med[(mode, k)])
    return {"plain": med[("baseline", 1)], "best_k": best_fixed, "best": med[(mode, best_fixed)],
            "auto": med[(mode, "auto")], "mean_k": mean_k}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=96)
    args = parser.parse_args()
    target, agreeing = build_cheap_draft_pair("dense", hidden=384, layers=16, draft_layers=2, noise=0.02)
    unrelated = build_model(target.parent / "unrelated", "dense", seed=7, hidden=384, layers=2)
    print(f"dense target 16 layers (hidden 384), draft 2 layers; {args.tokens} tokens, {args.runs} alternating "
          f"runs per cell; MLX device {mx.default_device()}")
    print("| situation | plain tok/s | best fixed K | its tok/s | auto tok/s | auto mean K | auto / best fixed "
          "| auto / plain |")
    print("|---|---|---|---|---|---|---|---|")
    cases = [("predictable: agreeing draft, structured prompt", agreeing, "draft", STRUCTURED),
             ("open: unrelated draft, open prompt", unrelated, "draft", OPEN),
             ("prompt lookup, text that repeats", None, "lookup", "one two three four. " * 6)]
    for label, draft, mode, text in cases:
        engine = Engine.load(target, draft)
        ids = list(engine.tokenizer.encode(text))
        r = compare(engine, ids, mode, args.runs, args.tokens)
        print(f"| {label} | {r['plain']:.1f} | {r['best_k']} | {r['best']:.1f} | {r['auto']:.1f} | "
              f"{r['mean_k']:.1f} | {r['auto'] / r['best']:.2f} | {r['auto'] / r['plain']:.2f} |")


if __name__ == "__main__":
    main()
