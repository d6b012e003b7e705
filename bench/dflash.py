"""DFlash on one target beside plain decoding, a draft model and the MTP head: what a block costs, and the decode.

Part 1, cost: one drafter pass over a block of B rows (the context cache holding the prompt), timed at B = 16
and B = 1, and one target verify pass over 16 tokens and over 1 (its cache holding the prompt), interleaved:
--passes turns each time every pass once, and each ratio is taken turn by turn (medians and ranges). A block
of 16 drafts 15 tokens in ONE pass: the ratio pass(B=16) / pass(B=1) says what the longer block costs on this
machine, and pass / verify what drafting adds to a round. Auto K bills a DFlash round one pass whatever its K (engine/autok.py, `one_pass_draft`).

Part 2, decode: greedy generations from empty caches, the modes interleaved (each rep runs every mode once,
the order rotating), every output checked against plain decoding's; medians with ranges of decode tok/s,
tokens per round, acceptance, and DFlash's acceptance by position in the block (of the drafts the target
checked at that position, the share it kept).

By default every model is built at random in a temp folder (tests/fixtures, their tiny size unless --hidden
and --layers say otherwise): a hybrid qwen3_5 target with an MTP head, a noisy copy of it as the draft model, and a random DFlash drafter for it. A random drafter is
almost never accepted, so part 2 shows the machinery and its overhead, not DFlash's speedup; part 1 holds on
any drafter of the same shape. Real folders: --target DIR --dflash DIR [--draft DIR] (MTP when the target
has a head).
Run: python bench/dflash.py [--reps 5] [--tokens 64] [--passes 21] [--k 15] [--draft-k 4] [--mtp-k 2]
     [--hidden 64 --layers 4] [--target DIR --dflash DIR --draft DIR]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import mlx.core as mx
from common import chat_ids
from mlx_lm.models.cache import make_prompt_cache

from specchat.engine import Engine, GenerationConfig, RoundResult
from specchat.engine.autok import AutoK
from specchat.upstream.hidden_capture import capture_forward, embed_tokens, project_logits
from tests.fixtures import tiny_models as tm
from tests.fixtures.dflash_models import build_dflash
from tests.fixtures.mtp_models import build_hybrid_mtp

PROMPT = "Write a Python function that merges two sorted lists, with a docstring and tests."


def spread(values: list[float], digits: int = 2) -> str:
    """'median (min-max)' of a list of numbers."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def drafter_pass(engine: Engine, ids: list[int], length: int) -> Callable[[], float]:
    """A timer of one drafter pass over a block of `length` rows and the head over its draft rows, the
    context cache holding the prompt's rows (rebuilt, untimed, before each pass)."""
    drafter = engine.drafters["dflash"]
    model, cfg = drafter.model, drafter.config
    _, layers = capture_forward(engine.target.model, mx.array(ids[:-1])[None], None, cfg.target_layer_ids)
    rows = mx.concatenate(layers, axis=-1)[0]
    block = mx.array([ids[-1]] + [cfg.mask_token_id] * (length - 1), dtype=mx.uint32)
    embed = embed_tokens(engine.target.model)

    def once() -> float:
        cache = model.make_cache()
        model.add_context(rows, cache)
        mx.eval([c.state for c in cache])
        start = time.perf_counter()
        hidden = model.block(embed(block), cache)
        mx.eval(project_logits(engine.target.model, hidden[1:] if length > 1 else hidden))
        return time.perf_counter() - start

    return once


def verify_pass(engine: Engine, ids: list[int], length: int) -> Callable[[], float]:
    """A timer of one target pass over `length` tokens after the prompt (its cache rebuilt, untimed, before each)."""
    model = engine.target.model
    feed = mx.array((ids * length)[:length], dtype=mx.uint32)[None]

    def once() -> float:
        cache = make_prompt_cache(model)
        mx.eval(model(mx.array(ids)[None], cache=cache))
        mx.eval([c.state for c in cache])
        start = time.perf_counter()
        mx.eval(model(feed, cache=cache))
        return time.perf_counter() - start

    return once


def interleaved(timers: dict[str, Callable[[], float]], passes: int) -> dict[str, list[float]]:
    """`passes` timings of each timer, one of each per turn (the order rotating), after one warmup turn: a busy
    machine slows them alike, so their ratios, taken turn by turn, hold better than their seconds."""
    names = list(timers)
    out: dict[str, list[float]] = {name: [] for name in names}
    for turn in range(passes + 1):
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            seconds = timers[name]()
            if turn:
                out[name].append(seconds)
    return out


@dataclass
class ModeRuns:
    """One mode's runs: decode speeds, tokens per drafting round, acceptance, DFlash's by block position."""

    cfg: GenerationConfig
    tok_s: list[float] = field(default_factory=list)
    per_round: list[float] = field(default_factory=list)
    acceptance: list[float] = field(default_factory=list)
    checked: dict[int, int] = field(default_factory=dict)  # by position in the block (0: the first draft)
    kept: dict[int, int] = field(default_factory=dict)

    def add(self, engine: Engine, ids: list[int], reference: list[int] | None) -> list[int]:
        """One generation from empty caches; its tokens (checked against the reference when there is one)."""
        engine.reset()
        events = list(engine.stream(ids, self.cfg))
        finished = events[-1]
        tokens = list(finished.tokens)
        assert reference is None or tokens == reference, f"{self.cfg.mode} K={self.cfg.num_draft_tokens} differs"
        rounds = [e for e in events if isinstance(e, RoundResult) and e.drafted]
        self.tok_s.append(finished.stats.decode_tokens_per_s)
        if rounds:
            self.per_round.append(statistics.mean(r.emitted for r in rounds))
            self.acceptance.append(sum(r.accepted for r in rounds) / sum(r.drafted for r in rounds))
        for r in rounds:  # position i was checked when every draft before it was kept
            for i in range(min(r.accepted + 1, r.drafted)):
                self.checked[i] = self.checked.get(i, 0) + 1
                self.kept[i] = self.kept.get(i, 0) + (i < r.accepted)
        return tokens

    def forget(self) -> None:
        """Drop what the warmup run measured."""
        self.tok_s, self.per_round, self.acceptance, self.checked, self.kept = [], [], [], {}, {}

    def label(self) -> str:
        k = self.cfg.num_draft_tokens
        return "plain" if self.cfg.mode == "baseline" else f"{self.cfg.mode} K={k}"


def build_models(hidden: int, layers: int) -> tuple[Path, Path, Path]:
    """A hybrid target with an MTP head, a noisy copy as draft model, a random DFlash drafter (temp folder)."""
    root = Path(tempfile.mkdtemp(prefix="specchat-bench-dflash-"))
    target = build_hybrid_mtp(root / "target", head="agree", fc_noise=0.3, hidden=hidden, layers=layers)
    draft = tm.perturb_model(target, root / "draft", 0.3, seed=1)
    return target, draft, build_dflash(root / "dflash", target, layer_ids=[1, layers - 2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", type=Path)
    parser.add_argument("--dflash", type=Path)
    parser.add_argument("--draft", type=Path)
    parser.add_argument("--hidden", type=int, default=64, help="the built target's width (the fixtures': 64)")
    parser.add_argument("--layers", type=int, default=4, help="the built target's layers (the fixtures': 4)")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--passes", type=int, default=21)
    parser.add_argument("--k", type=int, default=15, help="DFlash's fixed K (its auto K run too)")
    parser.add_argument("--draft-k", type=int, default=4)
    parser.add_argument("--mtp-k", type=int, default=2)
    args = parser.parse_args()
    if (args.target is None) != (args.dflash is None):
        parser.error("--target and --dflash go together")
    if args.target is None:
        target, draft, dflash = build_models(args.hidden, args.layers)
        what = f"random hybrid qwen3_5 hidden={args.hidden} layers={args.layers} + MTP head, noisy draft copy"
    else:
        target, draft, dflash = args.target, args.draft, args.dflash
        what = f"{target.name} + DFlash {dflash.name}" + (f" + draft {draft.name}" if draft else "")
    engine = Engine.load(target, draft, dflash=dflash)
    # DFlash's Auto K bills a round one pass, whatever K (AutoK.for_drafter reads the drafter's one_pass_draft)
    engine.auto_k.setdefault("dflash", AutoK(k_max=args.k)).for_drafter(engine.drafters["dflash"])
    ids = chat_ids(engine, PROMPT)
    block = engine.drafters["dflash"].config.block_size
    print(f"{what}; DFlash block {block}; prompt {len(ids)} tokens; MLX device {mx.default_device()}")
    cost(engine, ids, block, args.passes)
    decode(engine, ids, args)


def cost(engine: Engine, ids: list[int], block: int, passes: int) -> None:
    """Part 1: drafter passes by block length, target passes by length, interleaved; ms and per-turn ratios."""
    t = interleaved(
        {
            "d_block": drafter_pass(engine, ids, block),
            "d_one": drafter_pass(engine, ids, 1),
            "v_block": verify_pass(engine, ids, block),
            "v_one": verify_pass(engine, ids, 1),
        },
        passes,
    )

    def ms(name: str) -> str:
        return spread([1000 * x for x in t[name]])

    def ratio(a: str, b: str, scale: float = 1.0) -> str:
        return spread([scale * x / y for x, y in zip(t[a], t[b])])

    print(f"\n{passes} turns, each timing every pass once; ms and ratios: median (range) over the turns")
    print(f"| pass | B = {block} | B = 1 | ratio B={block} / B=1 |")
    print("|---|---|---|---|")
    print(f"| DFlash drafter (block + head) | {ms('d_block')} | {ms('d_one')} | {ratio('d_block', 'd_one')} |")
    print(f"| target verify | {ms('v_block')} | {ms('v_one')} | {ratio('v_block', 'v_one')} |")
    print(f"\ndrafter pass (B={block}) / verify pass ({block} tokens): {ratio('d_block', 'v_block', 1.0)}")
    print(f"drafter pass (B={block}) / verify pass (1 token, a plain step): {ratio('d_block', 'v_one', 1.0)}")
    print(f"{block - 1} one-row drafter passes / verify pass ({block} tokens): {ratio('d_one', 'v_block', block - 1)}")


def decode(engine: Engine, ids: list[int], args: argparse.Namespace) -> None:
    """Part 2: every available mode, interleaved, checked against plain decoding."""
    modes = engine.available_modes()
    cfgs = [GenerationConfig("baseline", max_tokens=args.tokens)]
    cfgs += [GenerationConfig("draft", args.draft_k, args.tokens)] if not modes["draft"] else []
    cfgs += [GenerationConfig("mtp", args.mtp_k, args.tokens)] if not modes["mtp"] else []
    cfgs += [GenerationConfig("dflash", k, args.tokens) for k in (args.k, "auto")]
    runs = [ModeRuns(cfg) for cfg in cfgs]
    reference = runs[0].add(engine, ids, None)  # also a warmup
    for run in runs[1:]:
        run.add(engine, ids, reference)  # warmup, checked
    for run in runs:
        run.forget()
    for rep in range(args.reps):
        order = runs[rep % len(runs) :] + runs[: rep % len(runs)]
        for run in order:
            run.add(engine, ids, reference)
    plain = statistics.median(runs[0].tok_s)
    print(f"\n{args.reps} reps of {args.tokens} tokens, interleaved; every output equals plain decoding's")
    print("| mode | decode tok/s: median (range) | vs plain | tokens per round | acceptance |")
    print("|---|---|---|---|---|")
    for run in runs:
        tok_s = run.tok_s
        per_round = spread(run.per_round) if run.per_round else "-"
        acceptance = f"{statistics.median(run.acceptance):.0%}" if run.acceptance else "-"
        print(
            f"| {run.label()} | {spread(tok_s, 1)} | {statistics.median(tok_s) / plain:.2f}x | {per_round} "
            f"| {acceptance} |"
        )
    fixed = runs[-2]
    shown = [f"{fixed.kept[i] / fixed.checked[i]:.0%} of {fixed.checked[i]}" for i in sorted(fixed.checked)]
    print(f"\nDFlash K={args.k} acceptance by block position (kept of checked, all runs): " + ", ".join(shown))


if __name__ == "__main__":
    main()
