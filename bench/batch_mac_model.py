"""A model, not a measurement: the batch's K controller replayed on recorded acceptance under a Mac's costs.

Two steps:
  record  run the real pair here on suite prompts (MT-Bench, HumanEval, stdlib edits: none written by us):
          the target's greedy reply, then one teacher-forced draft pass over it. Under greedy drafting a
          draft agrees with the target for exactly as long as the draft model's next-token guesses match
          the reply, so `agree[i]` (the run of matches from reply position i) gives the accepted drafts of
          a round at i for every K: min(K, agree[i]). Acceptance is a property of the pair, not the machine.
  replay  batches of 2, 4 and 8 rows, each row walking its traces, decoded by BatchK (the controller the
          batch uses), plainly, and at each fixed K, with round times from a roofline cost model of a named
          Apple chip: a pass costs max(weights and KV read / bandwidth, 2 x params x tokens / compute) plus a
          fixed launch cost, so a verify pass is flat in depth until the compute roof.

python bench/batch_mac_model.py record --target $QWEN_TARGET --draft $QWEN_DRAFT --per-category 2 --tokens 96 --out traces.json
python bench/batch_mac_model.py replay --traces traces.json [--target-gb 3.1 --draft-gb 1.0 --params-b 1.5 0.5]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from specchat.engine.batch.batch_k import BatchK  # noqa: E402

# Apple's published memory bandwidth (GB/s) per chip; the GPU's fp16 throughput (TFLOPS) as commonly
# derived from its ALU count and clock (Apple does not publish it); both used at the efficiencies below.
CHIPS = {
    "M3 Max (40-core GPU)": (400.0, 16.4),
    "M4 Max (40-core GPU)": (546.0, 18.4),
    "M2 Ultra (76-core GPU)": (800.0, 27.2),
}
BANDWIDTH_EFFICIENCY = 0.75  # share of the published bandwidth a decode pass reads at
COMPUTE_EFFICIENCY = 0.5  # share of peak fp16 a small-batch matmul reaches
LAUNCH_S = 0.002  # fixed cost of one forward pass (kernel launches, Python)


@dataclass(frozen=True)
class Pair:
    """What a pass of each model reads and computes: weights (GB) and parameters (billions)."""

    target_gb: float
    draft_gb: float
    target_params_b: float
    draft_params_b: float


@dataclass(frozen=True)
class Chip:
    """A roofline: bandwidth (GB/s) and fp16 compute (TFLOPS), both at their efficiencies."""

    name: str
    bandwidth: float
    tflops: float
    max_k: ClassVar[int] = 8  # the deepest fixed K the table shows (the batch's own limit, policy.batch_k_max)

    def pass_s(self, gb: float, params_b: float, tokens: int) -> float:
        """One forward pass over `tokens` rows (all rows of the batch, all positions)."""
        read = gb / (self.bandwidth * BANDWIDTH_EFFICIENCY)
        compute = 2 * params_b * 1e9 * tokens / (self.tflops * 1e12 * COMPUTE_EFFICIENCY)
        return max(read, compute) + LAUNCH_S

    def round_s(self, pair: Pair, rows: int, k: int) -> tuple[float, float]:
        """(round time, its verify pass) for `rows` rows drafting k tokens each (k = 0: a plain step)."""
        verify = self.pass_s(pair.target_gb, pair.target_params_b, rows * (k + 1))
        drafting = k * self.pass_s(pair.draft_gb, pair.draft_params_b, rows)
        return drafting + verify, verify


@dataclass(frozen=True)
class MeasuredCosts:
    """Pass times measured on a real device (bench/batch_pass_costs.py): verify per (rows, K), draft step per rows."""

    name: str
    verify_s: dict[int, list[float]]
    draft_s: dict[int, float]

    @classmethod
    def read(cls, path: str) -> MeasuredCosts:
        """The table batch_pass_costs.py wrote."""
        body = json.loads(Path(path).read_text())
        verify = {int(r): list(v) for r, v in body["verify_s"].items()}
        return cls(
            f"{body['device']}, {body['dtype']} (measured)", verify, {int(r): s for r, s in body["draft_s"].items()}
        )

    @property
    def max_k(self) -> int:
        """The deepest K measured at every batch size."""
        return min(len(v) for v in self.verify_s.values()) - 1

    def round_s(self, pair: Pair, rows: int, k: int) -> tuple[float, float]:
        """(round time, its verify pass) as measured: k draft steps over the rows and one verify pass."""
        verify = self.verify_s[rows][k]
        return k * self.draft_s[rows] + verify, verify


def agree_runs(matches: list[bool]) -> list[int]:
    """For each position, how many matches run from it (the drafts a round there would have accepted)."""
    runs, run = [0] * len(matches), 0
    for i in range(len(matches) - 1, -1, -1):
        run = run + 1 if matches[i] else 0
        runs[i] = run
    return runs


class Row:
    """One client: a reply drawn from the traces at random, from a random position, then another at random. Walking
    them in a fixed order would replay the same positions at the same round numbers, and the controller's tries of
    a K (every 8, 16, 32, 64 rounds) would land on the same tokens of 64-token traces every time."""

    def __init__(self, traces: list[list[int]], rng: random.Random):
        self.traces, self.rng = traces, rng
        self.index = rng.randrange(len(traces))
        self.pos = rng.randrange(len(traces[self.index]) - 1)

    def step(self, k: int) -> tuple[int, int]:
        """Advance one round at K: (tokens emitted, drafts accepted)."""
        trace = self.traces[self.index]
        accepted = min(k, trace[self.pos], len(trace) - self.pos - 1)
        self.pos += accepted + 1
        if self.pos >= len(trace):
            self.index, self.pos = self.rng.randrange(len(self.traces)), 0
        return accepted + 1, accepted


def simulate(
    traces: list[list[int]],
    rows: int,
    chip: Chip | MeasuredCosts,
    pair: Pair,
    fixed_k: int | None,
    tokens: int,
    controller: BatchK | None = None,
    seed: int = 0,
) -> float:
    """Tokens per second of `rows` clients until each emitted `tokens`: BatchK's choice (fixed_k None) or fixed;
    `controller`: one that served earlier batches (its costs and pooled acceptance, as the app keeps them); `seed`:
    where the clients' replies start (the same seed, the same walk for every policy until their Ks differ)."""
    rng = random.Random(seed)
    clients = [Row(traces, rng) for _ in range(rows)]
    controller = controller if controller is not None else BatchK()
    accept = [controller.new_row() for _ in clients]
    emitted, clock = [0] * rows, 0.0
    while min(emitted) < tokens:
        k = (
            fixed_k
            if fixed_k is not None
            else controller.choose([a.rate for a in accept], None, [a.hopeful for a in accept])
        )
        seconds, verify = chip.round_s(pair, rows, k)
        clock += seconds
        for i, row in enumerate(clients):
            got, accepted = row.step(k)
            emitted[i] += got
            if k:
                controller.observe_row(accept[i], k, accepted)
        controller.observe(rows, k, seconds, verify if k else None)
    return sum(emitted) / clock


def mean_over_seeds(seeds: int, run: Callable[[int], float]) -> float:
    """A policy's tokens per second, averaged over `seeds` walks of the traces."""
    return statistics.mean(run(seed) for seed in range(seeds))


def learned_run(
    traces: list[list[int]], rows: int, chip: Chip | MeasuredCosts, pair: Pair, tokens: int, seed: int
) -> float:
    """The controller's second batch: the first one's costs and acceptance kept, as the app keeps them per pair."""
    controller = BatchK()
    simulate(traces, rows, chip, pair, None, tokens, controller, seed + 10_000)
    return simulate(traces, rows, chip, pair, None, tokens, controller, seed)


def replay(args: argparse.Namespace) -> None:
    """The table: per chip and batch size, plain tok/s and each policy's speed as x plain."""
    data = json.loads(Path(args.traces).read_text())
    traces = [t["agree"] for t in data["traces"] if len(t["agree"]) > 1]
    pair = Pair(args.target_gb, args.draft_gb, *args.params_b)
    acceptance = statistics.mean(min(a, 1) for t in traces for a in t)
    print(f"{len(traces)} recorded replies ({data['pair']}), one-draft acceptance {acceptance:.0%}; a MODEL: {pair}")
    chips: list[Chip | MeasuredCosts] = [Chip(name, *figures) for name, figures in CHIPS.items()]
    if args.costs:
        chips = [MeasuredCosts.read(args.costs)]
        print(f"pass times measured on {chips[0].name}: a replay of recorded acceptance, not a run of the batch")
    ks = list(range(1, min(chip.max_k for chip in chips) + 1))
    print(
        "| chip | clients | plain tok/s | controller, new | controller, learned | "
        + " | ".join(f"K={k}" for k in ks)
        + " | new / best fixed | learned / best fixed |"
    )
    print("|---|---|---|---|---|" + "---|" * len(ks) + "---|---|")
    for chip in chips:
        for rows in args.clients:

            def policy(k: int | None) -> float:
                return mean_over_seeds(
                    args.seeds, lambda seed: simulate(traces, rows, chip, pair, k, args.tokens, seed=seed)
                )

            plain, auto = policy(0), policy(None)
            fixed = [policy(k) for k in ks]
            again = mean_over_seeds(args.seeds, lambda seed: learned_run(traces, rows, chip, pair, args.tokens, seed))
            cells = " | ".join(f"{f / plain:.2f}x" for f in fixed)
            best = max(fixed)
            print(
                f"| {chip.name} | {rows} | {plain:.1f} | {auto / plain:.2f}x | {again / plain:.2f}x | {cells} "
                f"| {auto / best:.2f} | {again / best:.2f} |"
            )


def record(args: argparse.Namespace) -> None:
    """Greedy replies of the real target to suite prompts, and the draft's agreement runs over them."""
    import mlx.core as mx

    from specchat.engine import Engine, GenerationConfig
    from specchat.tuning.suite_data import builtin_categories, fetch_suite

    engine = Engine.load(args.target, args.draft)
    draft_model = engine.drafters["draft"].runner.model
    items = fetch_suite(Path(args.cache)) + builtin_categories(args.per_category)
    chosen: dict[str, list] = {}
    for item in items:
        if len(chosen.setdefault(item.category, [])) < args.per_category:
            chosen[item.category].append(item)
    out: list[dict] = []
    body = {"pair": f"{Path(args.target).name} + {Path(args.draft).name}", "traces": out}
    wanted = args.categories or list(chosen)
    for category, picked in ((c, chosen[c]) for c in wanted if c in chosen):
        for item in picked:
            ids = engine.tokenizer.apply_chat_template(
                [{"role": "user", "content": item.turns[0]}], add_generation_prompt=True
            )
            engine.reset()
            reply = engine.generate(ids, GenerationConfig(mode="baseline", max_tokens=args.tokens)).tokens
            seq = mx.array(list(ids) + list(reply))[None]
            guesses = mx.argmax(draft_model(seq)[0], axis=-1).tolist()
            matches = [guesses[len(ids) + i - 1] == t for i, t in enumerate(reply)]
            out.append({"category": category, "id": item.id, "agree": agree_runs(matches)})
            print(f"{category} {item.id}: {sum(matches)}/{len(matches)} drafts match", flush=True)
            Path(args.out).write_text(json.dumps(body) + "\n")  # after each reply: a stopped run keeps its traces


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--target", required=True)
    rec.add_argument("--draft", required=True)
    rec.add_argument("--per-category", type=int, default=2)
    rec.add_argument("--tokens", type=int, default=96)
    rec.add_argument("--cache", default=str(Path.home() / ".cache" / "specchat-dev"))
    rec.add_argument("--out", default="traces.json")
    rec.add_argument("--categories", nargs="*", help="these suite categories, in this order (default: all)")
    rep = sub.add_parser("replay")
    rep.add_argument("--traces", required=True)
    rep.add_argument("--clients", type=int, nargs="+", default=[1, 2, 4, 8])
    rep.add_argument("--tokens", type=int, default=400, help="tokens each client decodes")
    rep.add_argument("--target-gb", type=float, default=3.1, help="the target's weights (bf16 1.5B: 3.1 GB)")
    rep.add_argument("--draft-gb", type=float, default=1.0)
    rep.add_argument("--params-b", type=float, nargs=2, default=[1.5, 0.5], help="target and draft, billions")
    rep.add_argument("--seeds", type=int, default=20, help="walks of the traces each figure is averaged over")
    rep.add_argument("--costs", help="pass times measured by bench/batch_pass_costs.py instead of the chips' rooflines")
    args = parser.parse_args()
    record(args) if args.command == "record" else replay(args)


if __name__ == "__main__":
    main()
