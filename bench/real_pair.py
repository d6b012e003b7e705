"""Speculation on a real Qwen pair: plain decoding, fixed K (ours and stock mlx-lm's), auto K and
prompt lookup, for a code and an open-ended prompt, short and long replies, and a conversation.

Build the pair once (../shared/tools/real-qwen-pair.sh), then:

    source ../shared/tools/real-qwen-pair.env
    python bench/real_pair.py --lengths 64 256 --reps 1

Every cell starts from empty caches (prefill included in its time: tokens / wall time of the whole
generation) and a fresh auto-K controller; the cells of one situation run in a rotating order, one
after the other, so a slow spell of the machine does not always hit the same cell. Greedy output of
every cell must equal plain decoding's (asserted). The conversation rows send three replies in one
chat: plain, fixed Ks and auto take turns on each reply, every side from empty caches, and auto K
keeps what it learned from one reply to the next.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import mlx.core as mx
from common import chat_ids

from specchat.engine import Engine, GenerationConfig
from tests.engine.helpers import mlx_lm_speculative_tokens

PROMPTS = {
    "code": "Write a Python function that merges two sorted lists into one sorted list, with a docstring "
    "and type hints.",
    "open": "Tell me a short story about a lighthouse keeper who finds a message in a bottle.",
}
FOLLOW_UPS = {
    "code": ("Now write unit tests for it with pytest.", "Make it work for any number of lists."),
    "open": ("Continue the story: what does the keeper do next?", "How does the story end?"),
}


def cells(ks: list[int], stock: bool) -> list[tuple[str, str, object]]:
    """(label, kind, K) for each cell: plain, ours at each K, stock at each K, auto, lookup."""
    out = [("plain", "baseline", 0)] + [(f"ours K={k}", "draft", k) for k in ks]
    out += [(f"stock K={k}", "stock", k) for k in ks] if stock else []
    return out + [("auto", "draft", "auto"), ("lookup auto", "lookup", "auto")]


def run_cell(engine: Engine, ids: list[int], kind: str, k, n: int) -> tuple[list[int], float, object]:
    """One generation from empty caches: its tokens, tokens per second of wall time, and stats."""
    engine.reset()
    engine.auto_k.clear()
    mx.clear_cache()
    start = time.perf_counter()
    if kind == "stock":
        tokens, stats = list(mlx_lm_speculative_tokens(engine, ids, k, n)), None
    else:
        cfg = GenerationConfig(mode=kind, num_draft_tokens=k if kind != "baseline" else 2, max_tokens=n)
        result = engine.generate(ids, cfg)
        tokens, stats = result.tokens, result.stats
    return tokens, len(tokens) / (time.perf_counter() - start), stats


def situation(engine: Engine, prompt: str, n: int, plan: list, reps: int) -> dict[str, list[float]]:
    """Each cell `reps` times in a rotating order; tok/s per cell, outputs checked against plain's."""
    ids = chat_ids(engine, prompt)
    reference, _, _ = run_cell(engine, ids, "baseline", 0, n)  # also warms the kernels up
    speeds: dict[str, list[float]] = {label: [] for label, _, _ in plan}
    details: dict[str, object] = {}
    for rep in range(reps):
        order = plan[rep % len(plan) :] + plan[: rep % len(plan)]
        for label, kind, k in order:
            tokens, tps, stats = run_cell(engine, ids, kind, k, n)
            assert tokens == reference, f"{label}: output differs from plain decoding"
            speeds[label].append(tps)
            details[label] = stats
            print(f"  {label}: {tps:.2f} tok/s", file=sys.stderr, flush=True)
    return {"speeds": speeds, "details": details}


def conversation(engine: Engine, kind: str, n: int, ks: list[int]) -> list[tuple[int, dict[str, float]]]:
    """Three replies in one chat; per reply, plain, each fixed K and auto K take turns on the same history
    (greedy: every side writes the same reply), each from empty caches like the single replies (so each
    prefills the same history). Auto K keeps what it learned between replies. (tokens, seconds per side)."""
    out, history = [], []
    engine.reset()
    engine.auto_k.clear()
    sides = [("plain", "baseline", 2)] + [(f"K={k}", "draft", k) for k in ks] + [("auto", "draft", "auto")]
    for turn in (PROMPTS[kind], *FOLLOW_UPS[kind]):
        history.append({"role": "user", "content": turn})
        ids = engine.tokenizer.apply_chat_template(history, add_generation_prompt=True)
        row, texts = {}, set()
        for label, mode, k in sides:
            engine.reset()
            start = time.perf_counter()
            result = engine.generate(ids, GenerationConfig(mode=mode, num_draft_tokens=k, max_tokens=n))
            row[label] = time.perf_counter() - start
            texts.add(result.text)
        assert len(texts) == 1, "a side wrote a different reply"
        history.append({"role": "assistant", "content": texts.pop()})
        out.append((len(result.tokens), row))
        print(
            f"  turn {len(out)}: "
            + ", ".join(f"{label} {len(result.tokens) / v:.2f}" for label, v in row.items())
            + " tok/s",
            file=sys.stderr,
            flush=True,
        )
    return out


def paired(speeds: dict[str, list[float]], label: str, other: str) -> str:
    """label's speed over other's, rep by rep (the two ran minutes apart), as the median and, over
    several reps, the range: a slow spell of the machine hits both sides of a pair."""
    ratios = sorted(a / b for a, b in zip(speeds[label], speeds[other]))
    spread = f" [{ratios[0]:.2f}-{ratios[-1]:.2f}]" if len(ratios) > 1 else ""
    return f"{statistics.median(ratios):.2f}{spread}"


def report(name: str, n: int, result: dict, ks: list[int]) -> None:
    """One Markdown row: each cell's median tok/s as x plain, and auto's paired ratios to the goals (the
    best fixed K is the one with the best median)."""
    med = {label: statistics.median(v) for label, v in result["speeds"].items()}
    plain = med["plain"]
    fixed = {label: v for label, v in med.items() if label.startswith("ours K=")}
    best_label = max(fixed, key=fixed.get)
    auto = result["details"]["auto"]

    def ratio(label: str) -> str:
        return f"{med[label] / plain:.2f}x" if label in med else "—"

    cols = [f"{plain:.2f}"] + [ratio(f"ours K={k}") for k in ks]
    cols += [ratio(f"stock K={k}") for k in ks] if any(label.startswith("stock") for label in med) else []
    cols += [
        f"{med['auto'] / plain:.2f}x",
        f"{med['lookup auto'] / plain:.2f}x",
        f"{paired(result['speeds'], 'auto', best_label)} ({best_label[5:]})",
        paired(result["speeds"], "auto", "plain"),
        f"{auto.plain_tokens}/{auto.generated_tokens} plain, {auto.accepted}/{auto.drafted} accepted",
    ]
    print(f"| {name} | {n} | " + " | ".join(cols) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default=os.environ.get("QWEN_TARGET"))
    parser.add_argument("--draft", default=os.environ.get("QWEN_DRAFT"))
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument(
        "--long-ks", type=int, nargs="+", default=None, help="fixed Ks for replies over 64 tokens (default: --ks)"
    )
    parser.add_argument("--kinds", nargs="+", default=list(PROMPTS))
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--no-stock", action="store_true")
    parser.add_argument("--conversation-tokens", type=int, default=64, help="0: no conversation rows")
    parser.add_argument(
        "--conversation-ks",
        type=int,
        nargs="+",
        default=[1, 4],
        help="fixed Ks beside plain and auto in the conversation (default: 1 4)",
    )
    parser.add_argument("--conversation-only", action="store_true", help="skip the single-reply rows")
    args = parser.parse_args()
    if not (args.target and args.draft and Path(args.target).is_dir() and Path(args.draft).is_dir()):
        sys.exit("no real pair: run ../shared/tools/real-qwen-pair.sh, then source real-qwen-pair.env")
    engine = Engine.load(args.target, args.draft)
    print(
        f"pair: {Path(args.target).name} + {Path(args.draft).name}; reps {args.reps}; tok/s = tokens / wall "
        "time from empty caches (prefill included)\n"
    )
    if args.conversation_only:
        conversation_table(engine, args)
        return
    rows = []
    for n in args.lengths:
        ks = args.long_ks if (n > 64 and args.long_ks) else args.ks
        for kind in args.kinds:
            print(f"{kind}, {n} tokens:", file=sys.stderr, flush=True)
            rows.append((kind, n, situation(engine, PROMPTS[kind], n, cells(ks, not args.no_stock), args.reps), ks))
    stock_head = "".join(f" stock K={k} |" for k in args.ks) if not args.no_stock else ""
    print(
        "| prompt | tokens | plain tok/s |"
        + "".join(f" ours K={k} |" for k in args.ks)
        + stock_head
        + " auto | lookup auto | auto / best fixed | auto / plain | auto's choices |"
    )
    print("|---" * (3 + len(args.ks) * (1 if args.no_stock else 2) + 5) + "|")
    for kind, n, result, _ks in rows:
        report(kind, n, result, args.ks)
    if args.conversation_tokens:
        conversation_table(engine, args)


def conversation_table(engine: Engine, args) -> None:
    """The conversation rows: each reply's tok/s as x plain, and auto's ratios to the goals."""
    ks = args.conversation_ks
    print(
        "\n| conversation | reply | plain tok/s |"
        + "".join(f" K={k} |" for k in ks)
        + " auto | auto / best fixed | auto / plain |\n"
        + "|---" * (6 + len(ks))
        + "|"
    )
    for kind in args.kinds:
        print(f"conversation, {kind}:", file=sys.stderr, flush=True)
        replies = conversation(engine, kind, args.conversation_tokens, ks)
        replies.append(
            (sum(n for n, _ in replies), {label: sum(r[label] for _, r in replies) for label in replies[0][1]})
        )
        for i, (tokens, seconds) in enumerate(replies, 1):
            row = {label: tokens / s for label, s in seconds.items()}
            plain, best = row["plain"], max(row[f"K={k}"] for k in ks)
            label = str(i) if i < len(replies) else "whole"
            print(
                f"| {kind} | {label} | {plain:.2f} | "
                + " | ".join(f"{row[f'K={k}'] / plain:.2f}x" for k in ks)
                + f" | {row['auto'] / plain:.2f}x | {row['auto'] / best:.2f} | {row['auto'] / plain:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
