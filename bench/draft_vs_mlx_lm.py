"""Our draft-mode loop vs mlx-lm's stock speculative_generate_step: same pair, same K, same tokens.

Prints tokens/s for both (median of alternating runs) and the ratio ours / mlx-lm.
Run: python bench/draft_vs_mlx_lm.py [--runs 7] [--tokens 128]
"""

from __future__ import annotations

import argparse
import time

import mlx.core as mx
from common import build_cheap_draft_pair, median
from mlx_lm.generate import generate_step, speculative_generate_step

from app.engine import Engine, GenerationConfig

PROMPT = "def merge_sorted(a: list[int], b: list[int]) -> list[int]:\n    "


def run_ours(engine: Engine, ids: list[int], k: int, n: int) -> tuple[list[int], float]:
    """Wall time of a full generation (prefill included) from empty caches; k=0 is plain decoding."""
    engine.reset()
    mode = "draft" if k else "baseline"
    start = time.perf_counter()
    result = engine.generate(ids, GenerationConfig(mode=mode, num_draft_tokens=max(k, 1), max_tokens=n))
    return result.tokens, time.perf_counter() - start


def run_mlx_lm(engine: Engine, ids: list[int], k: int, n: int) -> tuple[list[int], float]:
    """The same generation through mlx-lm's speculative_generate_step (generate_step for k=0)."""
    start = time.perf_counter()
    if k:
        steps = speculative_generate_step(mx.array(ids), engine.target.model, engine.draft.model,
                                          num_draft_tokens=k, max_tokens=n)
    else:
        steps = generate_step(mx.array(ids), engine.target.model, max_tokens=n)
    tokens = []
    for token, *_ in steps:
        if token in engine.tokenizer.eos_token_ids:
            break
        tokens.append(token)
    return tokens, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=384)
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--noise", type=float, default=0.02, help="draft = target's first 2 layers + this x std noise")
    args = parser.parse_args()
    target, draft = build_cheap_draft_pair("dense", args.hidden, args.layers, draft_layers=2, noise=args.noise)
    engine = Engine.load(target, draft)
    ids = list(engine.tokenizer.encode(PROMPT))
    print(f"dense pair: qwen3 hidden={args.hidden}, target {args.layers} layers, draft = its first 2 layers "
          f"+ {args.noise:.0%} noise; "
          f"{args.tokens} tokens, {args.runs} alternating runs, MLX device {mx.default_device()}")
    print("| K | ours tok/s | mlx-lm tok/s | ratio ours/mlx-lm | acceptance |")
    print("|---|---|---|---|---|")
    for k in (0, 2, 4):
        run_ours(engine, ids, k, 16), run_mlx_lm(engine, ids, k, 16)  # warm up
        ours, theirs = [], []
        for _ in range(args.runs):
            tokens_a, t_a = run_ours(engine, ids, k, args.tokens)
            tokens_b, t_b = run_mlx_lm(engine, ids, k, args.tokens)
            assert tokens_a == tokens_b, f"K={k}: outputs differ"
            ours.append(len(tokens_a) / t_a)
            theirs.append(len(tokens_b) / t_b)
        stats = engine.generate(ids, GenerationConfig(mode="draft" if k else "baseline", num_draft_tokens=max(k, 1),
                                                      max_tokens=args.tokens)).stats
        label = f"{k}" if k else "0 (plain decoding vs generate_step)"
        print(f"| {label} | {median(ours):.1f} | {median(theirs):.1f} | "
              f"{median(ours) / median(theirs):.3f} | {stats.acceptance_rate:.0%} |")


if __name__ == "__main__":
    main()
