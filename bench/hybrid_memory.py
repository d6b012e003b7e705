"""Peak memory of draft mode on a hybrid pair vs plain decoding, and whether it grows with length.

Budget (issue 2): peak(draft mode) <= peak(baseline) + draft weights + (K+1) recurrent states + 5%,
and the overhead over baseline must not grow with generation length (64 vs 512 tokens).
Two pairs: a draft as big as the target (a noisy copy: the worst case for the draft's own KV cache,
which the budget formula does not count) and a draft made of the target's first 2 layers (closer to a
real 0.8B draft for a 27B target).
Run: python bench/hybrid_memory.py [--k 4]
"""

from __future__ import annotations

import argparse
import gc

import mlx.core as mx
from common import build_cheap_draft_pair, build_pair
from mlx.utils import tree_flatten
from mlx_lm.models.cache import ArraysCache

from specchat.engine import Engine, GenerationConfig

GB = 1e9


def weight_bytes(model) -> int:
    """Bytes of a model's parameters, each array counted once (a head may share the target's embedding)."""
    return sum(v.nbytes for v in {id(v): v for _, v in tree_flatten(model.parameters())}.values())


def recurrent_state_bytes(runner) -> int:
    """Bytes of one full set of recurrent (conv + ssm) states of a runner's linear layers."""
    return sum(c.nbytes for c in runner.caches if isinstance(c, ArraysCache))


def kv_cache_bytes(runner) -> int:
    """Bytes held by a runner's attention (KV) caches: they grow with length in every mode."""
    return sum(c.nbytes for c in runner.caches if not isinstance(c, ArraysCache))


def peak(engine: Engine, ids, mode: str, k: int, n: int, **options):
    """Peak memory of one generation from empty caches (options: more GenerationConfig fields)."""
    engine.reset()
    gc.collect()  # engines hold reference cycles: a dropped one must not count in this peak
    mx.clear_cache()
    result = engine.generate(ids, GenerationConfig(mode=mode, num_draft_tokens=k, max_tokens=n, **options))
    assert len(result.tokens) == n, "the bench needs full-length generations"
    return result


def measure(target, draft, ids, k: int, n: int) -> dict:
    """Baseline and draft-mode peaks of one length, and the parts of the budget."""
    base_engine = Engine.load(target)
    base = peak(base_engine, ids, "baseline", k, n)
    del base_engine
    engine = Engine.load(target, draft)
    spec = peak(engine, ids, "draft", k, n)
    assert spec.tokens == base.tokens, "draft mode output differs from baseline"
    states = recurrent_state_bytes(engine.runner) + recurrent_state_bytes(engine.drafters["draft"].runner)
    row = {
        "n": n,
        "base": base.stats.peak_memory_bytes,
        "spec": spec.stats.peak_memory_bytes,
        "weights": weight_bytes(engine.draft.model),
        "states": states,
        "draft_kv": kv_cache_bytes(engine.drafters["draft"].runner),
        "all_kv": kv_cache_bytes(engine.drafters["draft"].runner) + kv_cache_bytes(engine.runner),
        "acceptance": spec.stats.acceptance_rate,
    }
    row["budget"] = row["base"] * 1.05 + row["weights"] + (k + 1) * states
    return row


def memory_args(doc: str) -> argparse.Namespace:
    """The memory benches' options: draft length K and the fixture target's shape."""
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    return parser.parse_args()


def main() -> None:
    args = memory_args(__doc__)
    shape = dict(hidden=args.hidden, layers=args.layers, linear_heads=(16, 8, 64))
    pairs = {
        "same-size draft": build_pair("hybrid", 0.004, **shape),
        "2-layer draft": build_cheap_draft_pair("hybrid", draft_layers=2, noise=0.004, **shape),
    }
    print(
        f"hybrid pairs: qwen3_5 target hidden={args.hidden} layers={args.layers} (linear 16x64 value heads); "
        f"K={args.k}, MLX device {mx.default_device()}"
    )
    print(
        "| pair | tokens | baseline peak GB | draft-mode peak GB | draft weights GB | recurrent states GB "
        "(target+draft) | draft KV cache GB | budget GB | within budget | budget + draft KV | "
        "peak minus all KV caches GB | acceptance |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, (target, draft) in pairs.items():
        ids = list(Engine.load(target).tokenizer.encode("Write a long story about the sea."))
        rows = [measure(target, draft, ids, args.k, n) for n in (64, 512)]
        for r in rows:
            print(
                f"| {label} | {r['n']} | {r['base'] / GB:.4f} | {r['spec'] / GB:.4f} | {r['weights'] / GB:.4f} | "
                f"{r['states'] / GB:.4f} | {r['draft_kv'] / GB:.4f} | {r['budget'] / GB:.4f} | "
                f"{'yes' if r['spec'] <= r['budget'] else 'NO'} | "
                f"{'yes' if r['spec'] <= r['budget'] + r['draft_kv'] else 'NO'} | "
                f"{(r['spec'] - r['all_kv']) / GB:.4f} | {r['acceptance']:.0%} |"
            )
        leak = (rows[1]["spec"] - rows[1]["all_kv"]) - (rows[0]["spec"] - rows[0]["all_kv"])
        print(
            f"{label}: draft-mode peak minus every KV cache, 512 vs 64 tokens: {leak / 1e6:+.2f} MB "
            "(what per-round rollback state could leak; KV caches grow in every mode)"
        )


if __name__ == "__main__":
    main()
