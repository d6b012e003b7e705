"""Auto against the draft model and prompt lookup on the copy-heavy prompts, in lockstep: each prompt answered by
the three in turn, the order rotating every rep, every reply from the same learned state.

The suite's table measures each cell once, minutes apart, and on summaries its runs have read 0.76 to 1.19 of
the better single drafter for one code: this machine's speed drifts by more than the gap being measured. Here a
rep's three replies run back to back, so Auto over the better single drafter is a ratio measured side by side,
and the controllers' knowledge is restored before each reply (a reply teaches Auto the prompt it answers; the
next rep's Auto must not start from that). After a prompt's reps the session carries on from its first Auto
reply's knowledge, as a session that answered it once would.
"""

from __future__ import annotations

import copy
import statistics
import sys

from specchat.engine import Engine, GenerationConfig
from specchat.engine.events import Finished, RoundResult
from specchat.engine.modes import SpecMode
from specchat.engine.prompt import chat_prompt_ids
from specchat.tuning.suite import SuiteConfig

SIDES = ("draft", "lookup", "auto")  # draft model and lookup at the suite's fixed K, Auto at Auto K


def snapshot(engine: Engine):
    """The controllers' live state (what the session would carry into its next reply)."""
    return copy.deepcopy(engine.auto_k), copy.deepcopy(engine.drafters["auto"].records)


def restore(engine: Engine, state) -> None:
    """Put back a snapshot's state."""
    engine.auto_k.clear()
    engine.auto_k.update(copy.deepcopy(state[0]))
    engine.drafters["auto"].records = copy.deepcopy(state[1])


def answer(
    engine: Engine, ids: list[int], mode: str, k: int | str, tokens: int, rounds: list[RoundResult] | None = None
) -> Finished:
    """One greedy reply from empty caches, `mode` at K `k` ("auto": Auto K); the controllers keep what they know.
    `rounds`: where to keep the reply's rounds (plain bursts among them)."""
    engine.reset()
    result = None
    for event in engine.stream(ids, GenerationConfig(SpecMode(mode), k, tokens, 0.0)):
        if isinstance(event, RoundResult) and rounds is not None:
            rounds.append(event)
        if isinstance(event, Finished):
            result = event
    assert result is not None, "the reply ended without a result"
    return result


TRACED = ("rounds", "tokens", "seconds", "refused")  # per maker of rounds in a reply (where_time_went)


def where_time_went(rounds: list[RoundResult]) -> dict[str, dict[str, float]]:
    """A reply's rounds by what made them (the drafter Auto picked, "plain" for plain bursts): rounds, tokens,
    seconds, and rounds whose drafts were all refused (one token for a verify pass)."""
    out: dict[str, dict[str, float]] = {}
    for r in rounds:
        by = out.setdefault(r.drafter or ("plain" if not r.drafted else "model"), dict.fromkeys(TRACED, 0.0))
        by["rounds"] += 1
        by["tokens"] += r.emitted
        by["seconds"] += r.draft_s + r.verify_s
        by["refused"] += bool(r.drafted and not r.accepted)
    return out


def lockstep_part(engine: Engine, chosen, tokens: int, reps: int) -> dict:
    """Every chosen item's first turn, `reps` lockstep reps of SIDES; per item the speeds, the better single drafter
    (by median), Auto over it in each rep, and where the first rep's Auto reply spent its time."""
    config, out = SuiteConfig(max_tokens=tokens), []
    for item in chosen:
        ids = chat_prompt_ids(engine.tokenizer, [{"role": "user", "content": item.turns[0]}], enable_thinking=False)
        start, carried, spent = snapshot(engine), None, {}
        speeds: dict[str, list[float]] = {side: [] for side in SIDES}
        reference = None
        for rep in range(reps):
            for side in SIDES[rep % 3 :] + SIDES[: rep % 3]:
                restore(engine, start)
                k = "auto" if side == "auto" else config.fixed_k(side, item.kind)
                rounds: list[RoundResult] = []
                f = answer(engine, ids, side, k, tokens, rounds)
                reference = reference or list(f.tokens)
                assert list(f.tokens) == reference, f"{item.id} {side}: output differs from the other replies"
                speeds[side].append(f.stats.generated_tokens / f.stats.decode_s)
                if side == "auto" and carried is None:
                    carried, spent = snapshot(engine), where_time_went(rounds)
            print(f"{item.category} {item.id} rep {rep + 1}/{reps}", file=sys.stderr, flush=True)
        restore(engine, carried or start)
        better = max(("draft", "lookup"), key=lambda side: statistics.median(speeds[side]))
        ratios = [a / b for a, b in zip(speeds["auto"], speeds[better])]
        out.append(
            {
                "category": item.category,
                "id": item.id,
                "speeds": speeds,
                "better": better,
                "auto_vs_best": ratios,
                "auto_rounds": spent,
            }
        )
    return {"reps": reps, "items": out}


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


def print_lockstep(part: dict) -> None:
    """Per item and per category: each side's tok/s (median), Auto over the better single drafter per rep."""
    print(f"\nCopy-heavy prompts in lockstep ({part['reps']} reps, the order rotating), decode tok/s medians:")
    print("| category | prompt | draft model | lookup | Auto | Auto / the better single drafter, every rep |")
    print("|---|---|---:|---:|---:|---|")
    by_cat: dict[str, list[float]] = {}
    for row in part["items"]:
        s = row["speeds"]
        cells = " | ".join(f"{statistics.median(s[side]):.2f}" for side in SIDES)
        print(f"| {row['category']} | {row['id']} | {cells} | {_spread(row['auto_vs_best'])} |")
        by_cat.setdefault(row["category"], []).extend(row["auto_vs_best"])
    print("\nWhere the first rep's Auto reply spent its time, by what made each round:")
    for row in part["items"]:
        parts = [
            f"{by} {int(t['rounds'])} rounds, {int(t['tokens'])} tokens in {t['seconds']:.1f} s "
            f"({t['tokens'] / t['seconds']:.2f}/s, {int(t['refused'])} refused whole)"
            for by, t in sorted(row["auto_rounds"].items())
            if t["seconds"]
        ]
        print(f"- {row['id']}: " + "; ".join(parts))
    for cat, ratios in by_cat.items():
        print(f"{cat}: Auto / the better of lookup and draft, every rep: {_spread(ratios)} (goal >= 1.00)")
