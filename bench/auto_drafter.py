"""Auto (the drafter picked each round) against every single drafter, on the suite's public prompts, and
Auto's first reply in a new session against its tenth in the old one.

    source ../shared/tools/real-qwen-pair.env        # QWEN_TARGET, QWEN_DRAFT
    python bench/auto_drafter.py --per-category 1 --tokens 64 --json auto.json
    python bench/auto_drafter.py --tiny --per-category 1 --tokens 8   # a quick smoke on the test fixtures
    python bench/auto_drafter.py --categories doc_summary,code_edit,doc_extract --per-category 3 --lockstep 3 \
        --skip-suite --skip-session                                     # the copy-heavy goal, side by side

Part 1 runs `specchat suite` in the app's session mode (the controllers keep what each generation learned,
after one warm-up reply per drafter on a prompt outside the measured set): plain decoding, the draft model
and prompt lookup at a fixed K (`--cells` adds their Auto K cells), and Auto. Every output is checked against plain
decoding's. Per category it prints each cell's decode speed over plain's, Auto over the best single drafter
(the faster of each drafter's two cells), and the issue's goals: the geometric mean over categories of Auto
over the best single drafter, Auto over plain on every category, and Auto against the better of lookup and
the draft model on the copy-heavy categories.

Part 2: a session of nine Auto replies on other prompts, its knowledge kept as the app keeps it (JSON on
disk), then the same prompt answered (a) as the tenth reply of that session and (b) as the first reply of a
new session that starts from the kept file, and (c) cold, from nothing learned; in lockstep pairs, the order
alternating. Printed: (b) / (a) and (c) / (a), decode speed medians with ranges.

Part 3 (`--lockstep N`): the chosen copy-heavy prompts answered by the draft model, lookup and Auto back to
back, N reps with the order rotating, each reply from the same learned state (auto_lockstep.py): Auto over the
better single drafter as a ratio measured side by side.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path

from auto_lockstep import answer, lockstep_part, print_lockstep, restore, snapshot
from common import build_pair

from specchat.engine import Engine
from specchat.engine.events import Finished
from specchat.engine.prompt import chat_prompt_ids
from specchat.tuning.suite import SuiteConfig, SuiteRun, run_suite, select
from specchat.tuning.suite_data import builtin_categories, cached_suite, fetch_suite
from specchat.tuning.suite_report import cell_summary

CELLS = ("draft:fixed", "lookup:fixed", "auto:auto")  # the issue compares Auto with each drafter at a fixed K
SINGLE = {"draft": ("draft fixed K", "draft auto K"), "lookup": ("lookup fixed K", "lookup auto K")}
AUTO_CELL = "auto auto K"
COPY_HEAVY = ("code_edit", "doc_extract", "doc_summary")


def items(per_category: int, categories: list[str] | None):
    """The suite's prompts (MT-Bench and HumanEval from the cache, fetched once), chosen as `specchat suite` does."""
    cache = Path(os.environ.get("SPECCHAT_HOME", Path.home() / ".cache/specchat")) / "cache"
    try:
        fetched = cached_suite(cache) or fetch_suite(cache)
    except Exception as exc:  # offline: the built-in categories only
        print(f"warning: {exc}; built-in categories only", file=sys.stderr)
        fetched = []
    every = fetched + builtin_categories()
    return every, select(every, categories, per_category)


def speed(f: Finished) -> float:
    return f.stats.generated_tokens / f.stats.decode_s


def warm_up(engine: Engine, every, chosen, tokens: int) -> None:
    """One reply per drafter on a prompt outside the measured set: a session's controllers are not cold."""
    measured = {i.id for i in chosen}
    spare = (
        next(i for i in every if i.id not in measured and i.category == "humaneval")
        if any(i.category == "humaneval" for i in every)
        else next(i for i in every if i.id not in measured)
    )
    ids = chat_prompt_ids(engine.tokenizer, [{"role": "user", "content": spare.turns[0]}], enable_thinking=False)
    for mode in ("draft", "lookup", "auto"):
        answer(engine, ids, mode, "auto", tokens)
    print(f"warm-up: {spare.category} {spare.id}, one reply each of draft, lookup and auto", file=sys.stderr)


def suite_part(engine: Engine, chosen, tokens: int, cells: tuple[str, ...]) -> SuiteRun:
    """The suite in session mode, with progress on stderr."""
    gen = run_suite(engine, chosen, SuiteConfig(max_tokens=tokens, cells=cells, session=True))
    while True:
        try:
            p = next(gen)
        except StopIteration as stop:
            return stop.value
        print(f"\r[{p.done}/{p.total}] {p.what}"[:110].ljust(110), end="", file=sys.stderr, flush=True)


def goals(run: SuiteRun) -> dict:
    """Per category: each cell over plain, Auto over the best single drafter; and the issue's three goals."""
    rows, ratios = [], []
    for cat, tallies in run.tallies.items():
        plain = tallies.get("plain")
        vs = {label: cell_summary(t, plain)["vs_plain"] for label, t in tallies.items() if label != "plain"}
        best_of = {d: max(vs.get(c) or 0.0 for c in cells) for d, cells in SINGLE.items()}
        auto = vs.get(AUTO_CELL) or 0.0
        best_single = max(best_of.values())
        ratios.append(auto / best_single if best_single else float("nan"))
        auto_rounds = tallies[AUTO_CELL].by_drafter if AUTO_CELL in tallies else {}
        rows.append(
            {
                "category": cat,
                "vs_plain": vs,
                "best_of": best_of,
                "auto_vs_best": ratios[-1],
                "auto_rounds": auto_rounds,
            }
        )
    geo = math.exp(statistics.fmean(math.log(r) for r in ratios)) if ratios else float("nan")
    return {
        "rows": rows,
        "geomean_auto_vs_best_single": geo,
        "auto_vs_plain_min": min((r["vs_plain"].get(AUTO_CELL) or 0.0) for r in rows),
        "copy_heavy": {
            r["category"]: (r["vs_plain"].get(AUTO_CELL) or 0.0) / max(r["best_of"].values())
            for r in rows
            if r["category"] in COPY_HEAVY
        },
        "exact": not run.errors,
        "errors": [e.message for e in run.errors],
    }


def print_goals(g: dict) -> None:
    ran = {label for r in g["rows"] for label in r["vs_plain"]}
    labels = [c for c in ("draft fixed K", "draft auto K", "lookup fixed K", "lookup auto K", AUTO_CELL) if c in ran]
    print("| category | " + " | ".join(labels) + " | Auto / best single | Auto's rounds by drafter |")
    print("|---|" + "---:|" * (len(labels) + 1) + "---|")
    for r in g["rows"]:
        cells = [f"{r['vs_plain'].get(c) or 0:.2f}x" for c in labels]
        mix = ", ".join(f"{name} {n}" for name, n in sorted(r["auto_rounds"].items())) or "-"
        print(f"| {r['category']} | " + " | ".join(cells) + f" | {r['auto_vs_best']:.2f} | {mix} |")
    print()
    print(
        f"Auto / best single drafter, geometric mean over categories: {g['geomean_auto_vs_best_single']:.3f} "
        f"(goal >= 1.05)"
    )
    print(f"Auto / plain, worst category: {g['auto_vs_plain_min']:.2f}x (goal >= 0.95x)")
    heavy = ", ".join(f"{c} {v:.2f}" for c, v in g["copy_heavy"].items())
    print(f"copy-heavy, Auto / the better of lookup and draft: {heavy} (goal >= 1.00)")
    print(f"every output equal to plain decoding's: {g['exact']}")


def session_part(engine: Engine, every, tokens: int, pairs: int, priors: dict, kept: Path) -> dict:
    """Nine replies, then the tenth against a new session's first (from the kept file) and a cold first."""
    by_cat: dict[str, list] = {}
    for item in every:
        by_cat.setdefault(item.category, []).append(item)
    probe = by_cat.get("code_edit", every)[0]
    session = [group[-1] for cat, group in by_cat.items() if group[-1] is not probe][:9]
    restore(engine, ({}, priors))
    for i, item in enumerate(session, 1):
        ids = chat_prompt_ids(engine.tokenizer, [{"role": "user", "content": item.turns[0]}], enable_thinking=False)
        f = answer(engine, ids, "auto", "auto", tokens)
        print(f"session reply {i}: {item.category} {item.id}: {speed(f):.2f} tok/s", file=sys.stderr)
    kept.write_text(json.dumps(engine.knowledge()))
    tenth = snapshot(engine)
    ids = chat_prompt_ids(engine.tokenizer, [{"role": "user", "content": probe.turns[0]}], enable_thinking=False)
    out: dict[str, list[float]] = {"tenth": [], "new session": [], "cold": []}
    rounds: dict[str, int] = {}
    for p in range(pairs):
        order = ["tenth", "new session", "cold"]
        order = order[p % 3 :] + order[: p % 3]
        for side in order:
            restore(engine, ({}, priors))
            if side == "tenth":
                restore(engine, tenth)
            elif side == "new session":
                engine.learn(json.loads(kept.read_text()))
            f = answer(engine, ids, "auto", "auto", tokens)
            out[side].append(speed(f))
            rounds[side] = f.stats.rounds
    return {"probe": f"{probe.category} {probe.id}", "speeds": out, "rounds": rounds}


def print_session(s: dict) -> None:
    t = s["speeds"]["tenth"]
    print(f"\nFirst reply of a new session vs the tenth, same prompt ({s['probe']}), {len(t)} lockstep rounds:")
    for side in ("tenth", "new session", "cold"):
        v = s["speeds"][side]
        ratios = [a / b for a, b in zip(v, t)]
        print(
            f"  {side:12} {statistics.median(v):.2f} tok/s ({min(v):.2f}-{max(v):.2f}); "
            f"/ tenth {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}); "
            f"rounds {s['rounds'][side]}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default=os.environ.get("QWEN_TARGET"))
    parser.add_argument("--draft", default=os.environ.get("QWEN_DRAFT"))
    parser.add_argument("--tiny", action="store_true", help="the tests' tiny dense pair (a quick smoke)")
    parser.add_argument("--per-category", type=int, default=1)
    parser.add_argument("--categories", help="comma-separated (default: every category)")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--pairs", type=int, default=3, help="lockstep rounds of part 2")
    parser.add_argument("--cells", default=",".join(CELLS), help="beside plain (specchat suite --cells)")
    parser.add_argument("--skip-suite", action="store_true")
    parser.add_argument("--skip-session", action="store_true", help="part 1 only")
    parser.add_argument("--lockstep", type=int, default=0, help="reps of the copy-heavy prompts in lockstep")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args()
    if args.tiny:
        args.target, args.draft = build_pair("dense", 0.02, hidden=64, layers=2)
    engine = Engine.load(args.target, args.draft)
    priors = copy.deepcopy(engine.drafters["auto"].records)
    every, chosen = items(args.per_category, args.categories.split(",") if args.categories else None)
    report: dict = {"target": str(args.target), "draft": str(args.draft), "tokens": args.tokens}
    if not args.skip_suite:
        warm_up(engine, every, chosen, args.tokens)
        run = suite_part(engine, chosen, args.tokens, tuple(args.cells.split(",")))
        print(file=sys.stderr)
        report["suite"] = goals(run)
        print_goals(report["suite"])
    if args.lockstep:
        heavy = [i for i in chosen if i.category in COPY_HEAVY]
        if args.skip_suite:
            warm_up(engine, every, chosen, args.tokens)
        report["lockstep"] = lockstep_part(engine, heavy, args.tokens, args.lockstep)
        print_lockstep(report["lockstep"])
    if not args.skip_session:
        kept = (
            Path(args.json).with_suffix(".knowledge.json") if args.json else Path(tempfile.mkdtemp()) / "knowledge.json"
        )
        report["session"] = session_part(engine, every, args.tokens, args.pairs, priors, kept)
        print_session(report["session"])
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
