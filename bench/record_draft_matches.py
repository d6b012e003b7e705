"""Record where a real draft model agrees with its target, token by token, for Auto K's simulation.

For each reply (the code and open prompts of bench/real_pair.py: a 256-token first reply, then the
conversation's two 64-token follow-ups) plain decoding writes the target's greedy reply, and one
teacher-forced pass of the draft over prompt + reply tells, at every position, whether the draft's
greedy guess equals the target's token, with the draft's confidence there (its top-1 probability and
the entropy of its distribution). A speculative round that starts at position p with K drafts
accepts exactly the run of agreements from p on (at most K), so these strings replay the pair's
acceptance for any K choice. tests/engine/autok_sim.py drives AutoK over them.

    source ../shared/tools/real-qwen-pair.env
    python bench/record_draft_matches.py --out tests/data/autok/real_pair_matches.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import mlx.core as mx
from real_pair import FOLLOW_UPS, PROMPTS

from specchat.engine import Engine, GenerationConfig


def agreements(draft_model, prompt: list[int], reply: list[int]) -> dict[str, object]:
    """At every position of reply: "match", '1' where the draft's greedy guess after prompt + reply[:i] is
    reply[i], else '0'; "top1", the draft's probability of its guess; "entropy", of its distribution (nats)."""
    logits = draft_model(mx.array([prompt + reply[:-1]]))[0, len(prompt) - 1 :].astype(mx.float32)
    logp = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
    guesses = mx.argmax(logits, axis=-1).tolist()
    top1 = mx.exp(mx.max(logp, axis=-1)).tolist()
    entropy = (-mx.sum(mx.exp(logp) * logp, axis=-1)).tolist()
    return {
        "match": "".join("1" if guess == token else "0" for guess, token in zip(guesses, reply)),
        "top1": [round(p, 3) for p in top1],
        "entropy": [round(h, 3) for h in entropy],
    }


def record(engine: Engine, first_tokens: int, follow_tokens: int) -> dict[str, dict]:
    """Agreement strings keyed "<kind>-<reply index>", with each reply's prompt length."""
    out = {}
    for kind in PROMPTS:
        history = []
        for i, turn in enumerate((PROMPTS[kind], *FOLLOW_UPS[kind])):
            history.append({"role": "user", "content": turn})
            ids = engine.tokenizer.apply_chat_template(history, add_generation_prompt=True)
            engine.reset()
            cfg = GenerationConfig(mode="baseline", max_tokens=first_tokens if i == 0 else follow_tokens)
            result = engine.generate(ids, cfg)
            out[f"{kind}-{i}"] = {"prompt_tokens": len(ids), **agreements(engine.draft.model, ids, result.tokens)}
            print(kind, i, out[f"{kind}-{i}"]["match"], file=sys.stderr, flush=True)
            # the conversation goes on with the first follow_tokens of the reply, as bench/real_pair.py's does
            history.append({"role": "assistant", "content": engine.tokenizer.decode(result.tokens[:follow_tokens])})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default=os.environ.get("QWEN_TARGET"))
    parser.add_argument("--draft", default=os.environ.get("QWEN_DRAFT"))
    parser.add_argument("--first-tokens", type=int, default=256)
    parser.add_argument("--follow-tokens", type=int, default=64)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if not (args.target and args.draft):
        sys.exit("no real pair: run ../shared/tools/real-qwen-pair.sh, then source real-qwen-pair.env")
    engine = Engine.load(args.target, args.draft)
    recorded = {
        "pair": [Path(args.target).name, Path(args.draft).name],
        "replies": record(engine, args.first_tokens, args.follow_tokens),
    }
    args.out.write_text(json.dumps(recorded, indent=1) + "\n")


if __name__ == "__main__":
    main()
