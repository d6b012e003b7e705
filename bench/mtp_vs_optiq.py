"""Our MTP mode vs mlx-optiq's own OptiqEngine.generate_stream(depth=K): same model, same depth, same tokens.

The model is a hybrid qwen3_5 with an MTP sidecar built on the fly (tests/fixtures/mtp_models.py):
"agree" (the head agrees with the target on every draft) and "partial" (noise in the head's fc).
Ours runs twice: with the head's history (its KV cache over the sequence, the default) and without
(`mtp_history=False`: each head step sees only itself, which is how mlx-optiq drafts).
Prints tokens/s for both (medians; prefill included, empty caches) and the median of per-pair ratios
with a bootstrap 95% interval; each pair is one lockstep run (bench/common.py: the two loops advance in
turn, round by round, so every slowdown of the machine hits both), the order alternating.
Run: python bench/mtp_vs_optiq.py [--pairs 11] [--tokens 96] [--depths 1 2 3 4] [--history on off]
     [--heads agree partial]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import mlx.core as mx
from common import engine_steps, lockstep_pairs
from optiq.runtime.engine import OptiqEngine

from specchat.engine import Engine, GenerationConfig
from tests.fixtures.mtp_models import build_hybrid_mtp

PROMPT = "def merge_sorted(a: list[int], b: list[int]) -> list[int]:\n    "
HEADS = {"agree": 0.0, "partial": 0.3}


def run_ours(
    engine: Engine, ids: list[int], depth: int, n: int, history: bool = True
) -> tuple[list[int], float, float]:
    """Tokens, wall time and acceptance of one MTP generation from empty caches."""
    engine.reset()
    start = time.perf_counter()
    cfg = GenerationConfig(mode="mtp", num_draft_tokens=depth, max_tokens=n, mtp_history=history)
    result = engine.generate(ids, cfg)
    return result.tokens, time.perf_counter() - start, result.stats.acceptance_rate


def run_optiq(engine: OptiqEngine, ids: list[int], depth: int, n: int) -> tuple[list[int], float, float]:
    """The same generation through mlx-optiq's engine (its own MTP loop and rollback)."""
    start = time.perf_counter()
    tokens = [e["token"] for e in engine.generate_stream("", prompt_ids=ids, max_tokens=n, depth=depth)]
    elapsed = time.perf_counter() - start
    stats = engine._last_stats
    return tokens, elapsed, stats.drafts_accepted / max(stats.drafts_attempted, 1)


def optiq_steps(engine: OptiqEngine, ids: list[int], depth: int, n: int, reference: list[int]):
    """mlx-optiq's engine, yielding each token as it comes."""
    tokens = []
    for event in engine.generate_stream("", prompt_ids=ids, max_tokens=n, depth=depth):
        tokens.append(event["token"])
        yield 1
    assert tokens == reference, f"depth {depth}: outputs differ"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=11)
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--depths", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument(
        "--history",
        nargs="+",
        choices=["on", "off"],
        default=["on", "off"],
        help="run ours with the head's history (on), without (off), or both",
    )
    parser.add_argument("--heads", nargs="+", choices=list(HEADS), default=list(HEADS))
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="specchat-bench-mtp-"))
    print(
        f"hybrid qwen3_5 hidden={args.hidden} layers={args.layers} + 1 MTP layer (sidecar); "
        f"{args.tokens} tokens, {args.pairs} pairs of back-to-back runs, MLX device {mx.default_device()}"
    )
    print(
        "| head | depth | ours: head history | ours tok/s | optiq tok/s | ratio ours/optiq (median of pairs) "
        "| 95% CI | acceptance ours | acceptance optiq |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for head in args.heads:
        noise = HEADS[head]
        folder = build_hybrid_mtp(root / head, head="agree", fc_noise=noise, hidden=args.hidden, layers=args.layers)
        ours_engine, optiq_engine = Engine.load(folder), OptiqEngine(str(folder))
        ids = list(ours_engine.tokenizer.encode(PROMPT))
        for depth in args.depths:
            reference, _, acc_b = run_optiq(optiq_engine, ids, depth, args.tokens)
            for history in args.history:
                acc_a = run_ours(ours_engine, ids, depth, args.tokens, history == "on")[2]  # also warms up
                cfg = GenerationConfig(
                    mode="mtp", num_draft_tokens=depth, max_tokens=args.tokens, mtp_history=history == "on"
                )
                speeds = lockstep_pairs(
                    lambda: engine_steps(ours_engine, ids, cfg, reference),
                    lambda: optiq_steps(optiq_engine, ids, depth, args.tokens, reference),
                    args.pairs,
                )
                print(f"| {head} | {depth} | {history} | {speeds.row()} | {acc_a:.0%} | {acc_b:.0%} |", flush=True)


if __name__ == "__main__":
    main()
