"""What structured output costs on a real Qwen pair: tokens per second with a grammar against without,
plain and speculating, side by side in one run.

Three rows per side (plain decoding, the draft model at auto K):
- free: the prompt's reply with no grammar;
- permissive: the same reply under a grammar that allows any text, so the tokens are the same and the
  difference is the mask alone (computing it per position, reading each draft token to advance it);
- schema: a JSON schema whose keys are fixed, so the grammar forces the keys and punctuation (no model
  pass for those tokens).
Greedy output under a grammar must be the same plain and speculating (asserted), and the permissive
reply must be the free one (asserted). Every cell starts from empty caches; cells rotate per rep.

    source ../shared/tools/real-qwen-pair.env
    python bench/structured_cost.py --reps 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from common import chat_ids

from specchat.engine import Engine, GenerationConfig
from specchat.engine.grammar import Grammar

PROMPT = (
    "Describe the Python function sorted() as JSON with the keys name, module, returns, arguments "
    "(a list of argument names), stable (true or false) and summary."
)
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "module": {"type": "string", "maxLength": 40},
        "returns": {"type": "string", "maxLength": 60},
        "arguments": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 6},
        "stable": {"type": "boolean"},
        "summary": {"type": "string", "maxLength": 200},
    },
    "required": ["name", "module", "returns", "arguments", "stable", "summary"],
    "additionalProperties": False,
}
ANY_TEXT = Grammar.lark(r"start: /(.|\n)*/")


def run(engine: Engine, ids: list[int], mode: str, grammar: Grammar | None, max_tokens: int) -> tuple[list[int], float]:
    """(tokens, tokens per second of the whole generation from empty caches)."""
    engine.reset()
    cfg = GenerationConfig(mode=mode, num_draft_tokens="auto", max_tokens=max_tokens, grammar=grammar)
    start = time.perf_counter()
    result = engine.generate(ids, cfg)
    return list(result.tokens), len(result.tokens) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default=os.environ.get("QWEN_TARGET"))
    parser.add_argument("--draft", default=os.environ.get("QWEN_DRAFT"))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=96)
    args = parser.parse_args()
    if not (args.target and args.draft):
        sys.exit("no real pair: run ../shared/tools/real-qwen-pair.sh, then source real-qwen-pair.env")
    engine = Engine.load(args.target, args.draft)
    ids = chat_ids(engine, PROMPT)
    cells = [
        (mode, name, grammar)
        for mode in ("baseline", "draft")
        for name, grammar in (("free", None), ("permissive", ANY_TEXT), ("schema", Grammar.json_schema(SCHEMA)))
    ]
    speeds: dict[tuple[str, str], list[float]] = {(m, n): [] for m, n, _ in cells}
    outputs: dict[tuple[str, str], list[int]] = {}
    for rep in range(args.reps):
        for mode, name, grammar in cells[rep % len(cells) :] + cells[: rep % len(cells)]:
            tokens, tps = run(engine, ids, mode, grammar, args.max_tokens)
            speeds[(mode, name)].append(tps)
            assert outputs.setdefault((mode, name), tokens) == tokens, f"{mode} {name}: output changed between reps"
    for name in ("free", "permissive", "schema"):
        assert outputs[("baseline", name)] == outputs[("draft", name)], f"{name}: speculation changed the output"
    assert outputs[("baseline", "permissive")] == outputs[("baseline", "free")], (
        "the permissive grammar changed the reply"
    )
    json.loads(engine.tokenizer.decode(outputs[("baseline", "schema")]))
    print(
        f"pair: {os.path.basename(args.target)} + {os.path.basename(args.draft)}; reps {args.reps}; "
        f"tok/s = tokens / wall time from empty caches, median [min-max]"
    )
    for mode in ("baseline", "draft"):
        free = statistics.median(speeds[(mode, "free")])
        for name in ("free", "permissive", "schema"):
            runs = speeds[(mode, name)]
            ratio = statistics.median(runs) / free
            print(
                f"  {mode:8s} {name:10s} {statistics.median(runs):6.2f} tok/s [{min(runs):.2f}-{max(runs):.2f}]  "
                f"{ratio:.2f}x free  ({len(outputs[(mode, name)])} tokens)"
            )


if __name__ == "__main__":
    main()
