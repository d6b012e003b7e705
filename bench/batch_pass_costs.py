"""Measured pass costs for the batch controller's replay, on whatever device MLX runs on here (this CPU, a Mac's
GPU, an NVIDIA GPU through `mlx[cuda]`): a target verify pass per (rows, drafts a row) and a draft step per rows,
for a pair's architectures read from their config.json files. The weights are random: a pass reads and multiplies
the same bytes whatever their values, so its time is the real pair's at that dtype.

python bench/batch_pass_costs.py --target-config $QWEN_TARGET/config.json --draft-config $QWEN_DRAFT/config.json \
    --dtype bfloat16 --out costs.json
python bench/batch_mac_model.py replay --traces bench/batch_traces_qwen25coder.json --costs costs.json
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mlx.core as mx  # noqa: E402

from specchat.upstream.mlx_lm import make_prompt_cache, model_classes  # noqa: E402

DTYPES = {"bfloat16": mx.bfloat16, "float16": mx.float16, "float32": mx.float32}


def build(config_file: str, dtype: mx.Dtype):
    """A model of this config's architecture with random weights at `dtype`."""
    config = json.loads(Path(config_file).read_text())
    model_class, args_class = model_classes(config)
    model = model_class(args_class.from_dict(config))
    model.set_dtype(dtype)
    mx.eval(model.parameters())
    return model


class Pass:
    """One kind of pass: a model, rows x positions new tokens after `context` cached tokens a row."""

    def __init__(self, model, rows: int, positions: int, context: int):
        self.model, self.positions = model, positions
        self.cache = make_prompt_cache(model)
        vocab = model.args.vocab_size
        mx.eval(model(mx.random.randint(0, vocab, (rows, context)), cache=self.cache))
        self.tokens = mx.random.randint(0, vocab, (rows, positions))
        self.times: list[float] = []

    def time_once(self) -> None:
        """One pass, timed; the cache trimmed back after it, as a rejected round rolls back."""
        start = time.perf_counter()
        mx.eval(self.model(self.tokens, cache=self.cache))
        self.times.append(time.perf_counter() - start)
        for c in self.cache:
            c.trim(self.positions)


def measure(passes: list[Pass], reps: int, seed: int = 0) -> None:
    """Each pass `reps` times, interleaved in a shuffled order each rep (a clock that drifts touches every cell
    alike); two untimed reps first (kernels compiled, caches grown)."""
    order = random.Random(seed)
    for rep in range(reps + 2):
        for p in order.sample(passes, len(passes)):
            p.time_once()
            if rep < 2:
                p.times.pop()


def _spread(times: list[float]) -> float:
    """The interquartile range over the median."""
    q = statistics.quantiles(times, n=4)
    return (q[2] - q[0]) / q[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target-config", required=True)
    parser.add_argument("--draft-config", required=True)
    parser.add_argument("--dtype", choices=list(DTYPES), default="bfloat16")
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--max-k", type=int, default=8, help="verify passes of 1 to max-k + 1 positions a row")
    parser.add_argument("--context", type=int, default=512, help="tokens each row has cached (a prompt and reply)")
    parser.add_argument("--reps", type=int, default=31)
    parser.add_argument("--out", default="costs.json")
    args = parser.parse_args()
    dtype = DTYPES[args.dtype]
    target, draft = build(args.target_config, dtype), build(args.draft_config, dtype)
    verifies = {rows: [Pass(target, rows, k + 1, args.context) for k in range(args.max_k + 1)] for rows in args.rows}
    drafts = {rows: Pass(draft, rows, 1, args.context) for rows in args.rows}
    every = [*drafts.values(), *(p for row in verifies.values() for p in row)]
    measure(every, args.reps)
    verify = {str(rows): [statistics.median(p.times) for p in row] for rows, row in verifies.items()}
    draft_step = {str(rows): statistics.median(p.times) for rows, p in drafts.items()}
    spread = max(_spread(p.times) for p in every)
    for rows in args.rows:
        cells = " ".join(f"{s * 1000:.1f}" for s in verify[str(rows)])
        print(f"rows {rows}: verify ms at K=0..{args.max_k}: {cells}; draft step {draft_step[str(rows)] * 1000:.1f} ms")
    print(f"widest interquartile range of a cell: {spread:.0%} of its median")
    device = f"{mx.default_device()} on {platform.machine()}"
    body = {"device": device, "dtype": args.dtype, "context": args.context, "verify_s": verify, "draft_s": draft_step}
    Path(args.out).write_text(json.dumps(body, indent=1) + "\n")
    print(f"wrote {args.out} ({device})")


if __name__ == "__main__":
    main()
