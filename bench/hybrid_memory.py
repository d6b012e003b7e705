"""Peak memory of draft mode on a hybrid pair vs plain decoding, and whether it grows with length.

Budget (issue 2): peak(draft mode) <= peak(baseline) + draft weights + (K+1) recurrent states + 5%,
and the overhead over baseline must not grow with generation length (64 vs 512 tokens).
Run: python bench/hybrid_memory.py [--k 4]
"""

from __future__ import annotations

import argparse

import mlx.core as mx
from common import build_pair
from mlx.utils import tree_flatten
from mlx_lm.models.cache import ArraysCache

from app.engine import Engine, GenerationConfig

GB = 1e9


def weight_bytes(model) -> int:
    """Bytes of a model's parameters."""
    return sum(v.nbytes for _, v in tree_flatten(model.parameters()))


def recurrent_state_bytes(runner) -> int:
    """Bytes of one full set of recurrent (conv + ssm) states of a runner's linear layers."""
    return sum(c.nbytes for c in runner.caches if isinstance(c, ArraysCache))


def kv_cache_bytes(runner) -> int:
    """Bytes held by a runner's attention (KV) caches: they grow with length in every mode."""
    return sum(c.nbytes for c in runner.caches if not isinstance(c, ArraysCache))


def peak(engine: Engine, ids, mode: str, k: int, n: int):
    """Peak memory of one generation from empty caches."""
    engine.reset()
    mx.clear_cache()
    result = engine.generate(ids, GenerationConfig(mode=mode, num_draft_tokens=k, max_tokens=n))
    assert len(result.tokens) == n, "the bench needs full-length generations"
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    args = parser.parse_args()
    target, draft = build_pair("hybrid", 0.004, hidden=args.hidden, layers=args.layers,
                               linear_heads=(16, 8, 64))
    ids = None
    rows = []
    for n in (64, 512):
        base_engine = Engine.load(target)
        ids = ids or list(base_engine.tokenizer.encode("Write a long story about the sea."))
        base = peak(base_engine, ids, "baseline", args.k, n)
        del base_engine
        engine = Engine.load(target, draft)
        spec = peak(engine, ids, "draft", args.k, n)
        assert spec.tokens == base.tokens, "draft mode output differs from baseline"
        draft_w = weight_bytes(engine.draft.model)
        states = recurrent_state_bytes(engine.runner) + recurrent_state_bytes(engine.drafters["draft"].runner)
        budget = base.stats.peak_memory_bytes * 1.05 + draft_w + (args.k + 1) * states
        draft_kv = kv_cache_bytes(engine.drafters["draft"].runner)
        all_kv = draft_kv + kv_cache_bytes(engine.runner)
        rows.append((n, base.stats.peak_memory_bytes, spec.stats.peak_memory_bytes, draft_w, states, budget,
                     spec.stats.acceptance_rate, draft_kv, all_kv))
        del engine
    print(f"hybrid pair: qwen3_5 hidden={args.hidden} layers={args.layers} (linear 16x64 value heads), "
          f"draft = target + 0.4% noise, K={args.k}, MLX device {mx.default_device()}")
    print("| tokens | baseline peak GB | draft-mode peak GB | draft weights GB | recurrent states GB "
          "(target+draft) | draft KV cache GB | budget GB | within budget | budget + draft KV | "
          "peak minus all KV caches GB | acceptance |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n, b, s, w, st, budget, acc, dkv, akv in rows:
        print(f"| {n} | {b / GB:.4f} | {s / GB:.4f} | {w / GB:.4f} | {st / GB:.4f} | {dkv / GB:.4f} | "
              f"{budget / GB:.4f} | {'yes' if s <= budget else 'NO'} | "
              f"{'yes' if s <= budget + dkv else 'NO'} | {(s - akv) / GB:.4f} | {acc:.0%} |")
    leak = (rows[1][2] - rows[1][8]) - (rows[0][2] - rows[0][8])
    print(f"draft-mode peak minus every KV cache (target + draft), 512 vs 64 tokens: {leak / 1e6:+.2f} MB "
          "(what per-round rollback state could leak; KV caches grow in every mode)")


if __name__ == "__main__":
    main()
