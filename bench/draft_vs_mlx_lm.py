"""Our draft-mode loop vs mlx-lm's stock speculative_generate_step: same pair, same K, same tokens.

Prints tokens/s for both (medians) and the median of per-pair ratios ours / mlx-lm with a bootstrap
95% interval. For K > 0 each pair is one lockstep run (bench/common.py: the two loops advance in turn,
round by round, so every slowdown of the machine hits both); plain decoding pipelines across tokens,
so K = 0 pairs are two whole runs back to back. The order alternates between pairs. The last column leaves
out each loop's first step (the prompt's prefill and the first round): the rounds alone, since our prefill
runs in chunks of about a second (cancel and progress move between them) where mlx-lm reads 512 at a time.
Run: python bench/draft_vs_mlx_lm.py [--pairs 15] [--tokens 96] [--context 1500]
On the real Qwen pair (real_pair.py): python bench/draft_vs_mlx_lm.py --target $QWEN_TARGET --draft $QWEN_DRAFT
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import mlx.core as mx
from common import Paired, build_cheap_draft_pair, chat_ids, engine_steps, lockstep_runs, paired_runs
from mlx_lm.generate import generate_step
from real_pair import PROMPTS

from specchat.engine import Engine, GenerationConfig
from tests.engine.helpers import mlx_lm_speculative_tokens, until_stop
from tests.fixtures.model_work import counting

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
        tokens = list(mlx_lm_speculative_tokens(engine, ids, k, n))
    else:
        steps = generate_step(mx.array(ids), engine.target.model, max_tokens=n)
        tokens = list(until_stop(steps, engine.tokenizer.eos_token_ids))
    return tokens, time.perf_counter() - start


def mlx_lm_steps(engine: Engine, ids: list[int], k: int, n: int, reference: list[int]):
    """mlx-lm's speculative_generate_step, yielding each token as it comes."""
    tokens = []
    for token in mlx_lm_speculative_tokens(engine, ids, k, n):
        tokens.append(token)
        yield 1
    assert tokens == reference, f"K={k}: outputs differ"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=15)
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--hidden", type=int, default=384)
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--noise", type=float, default=0.02, help="draft = target's first 2 layers + this x std noise")
    parser.add_argument("--target", help="a real target folder instead of the fixture (with --draft)")
    parser.add_argument("--draft", help="its draft model folder")
    parser.add_argument("--ks", type=int, nargs="+", default=[0, 2, 4])
    parser.add_argument("--context", type=int, default=0, help="pad the prompt to about this many tokens")
    args = parser.parse_args()
    if args.target:
        engine = Engine.load(args.target, args.draft)
        ids = chat_ids(engine, PROMPTS["code"])
        pair = f"{Path(args.target).name} + {Path(args.draft).name}"
    else:
        target, draft = build_cheap_draft_pair("dense", args.hidden, args.layers, draft_layers=2, noise=args.noise)
        engine = Engine.load(target, draft)
        ids = list(engine.tokenizer.encode(PROMPT))
        pair = (
            f"dense pair: qwen3 hidden={args.hidden}, target {args.layers} layers, draft = its first 2 layers "
            f"+ {args.noise:.0%} noise"
        )
    ids = padded(engine, ids, args.context)
    print(
        f"{pair}; {len(ids)}-token prompt, {args.tokens} tokens, {args.pairs} pairs of back-to-back runs, MLX device {mx.default_device()}"
    )
    print(
        "| K | ours tok/s | mlx-lm tok/s | ratio ours/mlx-lm (median of pairs) | 95% CI | acceptance "
        "| rows fed to target, draft: ours / mlx-lm | after the first step: ours/mlx-lm (95% CI) |"
    )
    # K > 0: lockstep pairs; K = 0: whole runs back to back
    print("|---|---|---|---|---|---|---|---|")
    for k in args.ks:
        reference = run_mlx_lm(engine, ids, k, args.tokens)[0]
        run_ours(engine, ids, k, args.tokens)  # warm up both
        if k:
            cfg = GenerationConfig(mode="draft", num_draft_tokens=k, max_tokens=args.tokens)
            runs = lockstep_runs(
                lambda: engine_steps(engine, ids, cfg, reference),
                lambda: mlx_lm_steps(engine, ids, k, args.tokens, reference),
                args.pairs,
            )
            speeds = Paired([a.speed for a, _ in runs], [b.speed for _, b in runs])
            rounds = Paired(  # our loop yields whole rounds: its first step's tokens are the first round's
                [a.speed_after(a.first_tokens) for a, _ in runs], [b.speed_after(a.first_tokens) for a, b in runs]
            )
            after_first = f"{rounds.ratio:.4f} ({rounds.ci()[0]:.3f}-{rounds.ci()[1]:.3f})"
        else:
            speeds = paired_runs(
                lambda: _speed(run_ours, engine, ids, k, args.tokens, reference),
                lambda: _speed(run_mlx_lm, engine, ids, k, args.tokens, reference),
                args.pairs,
            )
            after_first = "n/a (whole runs)"
        stats = engine.generate(
            ids, GenerationConfig(mode="draft" if k else "baseline", num_draft_tokens=max(k, 1), max_tokens=args.tokens)
        ).stats
        label = f"{k}" if k else "0 (plain decoding vs generate_step)"
        print(
            f"| {label} | {speeds.row()} | {stats.acceptance_rate:.0%} | {work_row(engine, ids, k, args.tokens)} | {after_first} |",
            flush=True,
        )


def padded(engine: Engine, ids: list[int], context: int) -> list[int]:
    """The prompt after a long pasted source file (this script's own, repeated) up to about `context` tokens:
    what a round costs at a long context, where per-round work that grows with the sequence shows."""
    if context <= len(ids):
        return ids
    source = list(engine.tokenizer.encode(Path(__file__).read_text()))
    filler = (source * (context // max(len(source), 1) + 1))[: context - len(ids)]
    return filler + ids


def work_row(engine: Engine, ids: list[int], k: int, n: int) -> str:
    """Token rows each loop fed to the target and the draft in one generation: the arithmetic it asked for."""
    models = (engine.target.model, engine.draft.model)
    with counting(*models) as ours:
        run_ours(engine, ids, k, n)
    with counting(*models) as theirs:
        run_mlx_lm(engine, ids, k, n)
    return f"{ours[0].rows}, {ours[1].rows} / {theirs[0].rows}, {theirs[1].rows}"


def _speed(run, engine: Engine, ids: list[int], k: int, n: int, reference: list[int]) -> float:
    tokens, seconds = run(engine, ids, k, n)
    assert tokens == reference, f"K={k}: outputs differ"
    return len(tokens) / seconds


if __name__ == "__main__":
    main()
