"""Many clients at once: N concurrent streaming chat clients against `serve`'s batched decoding, with
speculation on (mode draft, auto K) and with plain decoding (mode baseline), side by side in one run.

    source ../shared/tools/real-qwen-pair.env        # QWEN_TARGET, QWEN_DRAFT
    python bench/concurrent_clients.py --clients 1 2 4 8 --tokens 64 --reps 3
    python bench/concurrent_clients.py --tiny --reps 1  # a quick smoke on the test fixtures

The server runs in-process on loopback (`EngineBackend` with --max-batch, default the largest N). For
each N, client i streams prompt i (code and prose, greedy, max_tokens --tokens); all N send at once.
Each rep runs both sides back to back, the side that goes first alternating, so a slow spell of the
machine hits both. Per N it prints the aggregate tok/s (every client's tokens / the wall time from the
first send to the last token) of each side, speculation's aggregate over N=1's, the per-client tok/s
(tokens / that client's own wall time) min and median, and each client's rate over its rate in the
plain batch (median [min-max] over clients and reps). Every greedy output must equal its solo output
(asserted; solo = the engine alone on the same prompt), and usage.speculation's batch size is shown.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from common import ROOT

from specchat.engine import GenerationConfig, TextChunk
from specchat.engine.owner import EngineHost, load_pair_job
from specchat.server.app import ServerOptions
from specchat.server.backend import EngineBackend
from specchat.server.running import BackgroundServer, free_port

PROMPTS = [
    "Write a Python function that merges two sorted lists into one sorted list, with a docstring.",
    "Tell me a short story about a lighthouse keeper who finds a message in a bottle.",
    "Write a JavaScript function that debounces another function, with comments.",
    "Describe a walk through an autumn forest in a few sentences.",
    "Write a SQL query that finds the ten customers with the largest total order value.",
    "Explain to a child why the sky is blue.",
    "Write a Rust function that reverses the words of a sentence.",
    "Write a letter to a friend about a trip to the mountains.",
]
SIDES = {"speculation": {"mode": "draft", "num_draft_tokens": "auto"}, "plain": {"mode": "baseline"}}


@dataclass(frozen=True)
class ClientRun:
    """One client's streamed reply: its text, tokens, its own wall time and the batch size it ran at."""

    text: str
    tokens: int
    seconds: float
    rows_max: int
    rows_mean: float

    @property
    def rate(self) -> float:
        return self.tokens / self.seconds


def tiny_pair() -> tuple[Path, Path]:
    """The tests' tiny dense target and its partly agreeing draft, built in a temp folder."""
    sys.path.insert(0, str(ROOT))
    from tests.fixtures import tiny_models as tm

    root = Path(tempfile.mkdtemp(prefix="specchat-bench-clients-"))
    target = tm.build_dense(root / "dense_target", seed=0)
    return target, tm.build_dense(root / "dense_draft_partial", seed=1, base=target)


def messages(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}]


def solo_text(host: EngineHost, i: int, tokens: int) -> str:
    """The greedy reply to prompt i from the engine alone (plain decoding; speculation gives the same)."""

    def work(ctx) -> str:
        engine = ctx.engine
        ids = list(engine.tokenizer.apply_chat_template(messages(i), add_generation_prompt=True))
        cfg = GenerationConfig(mode="baseline", max_tokens=tokens)
        return "".join(e.text for e in engine.stream(ids, cfg) if isinstance(e, TextChunk))

    text: str = host.submit("bench-solo", work).result()
    return text


def stream_one(url: str, model: str, i: int, tokens: int, side: str, start: threading.Barrier) -> ClientRun:
    """One client: wait for the others, then stream its chat and time it."""
    body = {
        "model": model,
        "messages": messages(i),
        "max_tokens": tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
        "speculation": SIDES[side],
    }
    text, usage = [], None
    with httpx.Client(timeout=600) as client:
        start.wait()
        began = time.perf_counter()
        with client.stream("POST", url + "/v1/chat/completions", json=body) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                if "error" in chunk:
                    raise RuntimeError(f"client {i}: {chunk['error']}")
                if chunk.get("choices"):
                    text.append(chunk["choices"][0]["delta"].get("content") or "")
                if chunk.get("usage"):
                    usage = chunk["usage"]
        seconds = time.perf_counter() - began
    assert usage is not None, "no usage chunk"
    spec = usage["speculation"]
    return ClientRun(
        "".join(text), usage["completion_tokens"], seconds, spec["batch_rows_max"], spec["batch_rows_mean"]
    )


def run_side(url: str, model: str, n: int, tokens: int, side: str) -> tuple[float, list[ClientRun]]:
    """n clients at once on one side: (aggregate tok/s, each client's run)."""
    start = threading.Barrier(n + 1)
    runs: dict[int, ClientRun | BaseException] = {}

    def client(i: int) -> None:
        try:
            runs[i] = stream_one(url, model, i, tokens, side, start)
        except BaseException as exc:  # re-raised below, in the main thread
            runs[i] = exc

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    for outcome in runs.values():
        if isinstance(outcome, BaseException):
            raise outcome
    ordered = [runs[i] for i in range(n)]
    assert all(isinstance(r, ClientRun) for r in ordered)
    return sum(r.tokens for r in ordered) / wall, ordered  # type: ignore[union-attr]


def spread(values: list[float]) -> str:
    """'median [min-max]' of ratios."""
    values = sorted(values)
    return f"{statistics.median(values):.2f} [{values[0]:.2f}-{values[-1]:.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default=os.environ.get("QWEN_TARGET"))
    parser.add_argument("--draft", default=os.environ.get("QWEN_DRAFT"))
    parser.add_argument("--tiny", action="store_true", help="the tests' tiny dense pair (a quick smoke)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--tokens", type=int, default=64, help="max_tokens of every request")
    parser.add_argument("--reps", type=int, default=1, help="paired reps per N")
    parser.add_argument("--max-batch", type=int, default=None, help="default: the largest --clients")
    args = parser.parse_args()
    if args.tiny:
        target, draft = tiny_pair()
    elif args.target and args.draft and Path(args.target).is_dir() and Path(args.draft).is_dir():
        target, draft = Path(args.target), Path(args.draft)
    else:
        sys.exit("no pair: give --target and --draft (or QWEN_TARGET / QWEN_DRAFT), or --tiny")
    host = EngineHost()
    host.submit("load", load_pair_job(target, draft, keep_target_on_bad_draft=False)).result()
    max_batch = args.max_batch or max(args.clients)
    backend = EngineBackend(host, max_queue=max(args.clients), max_batch=max_batch)
    defaults = GenerationConfig(mode="draft", num_draft_tokens="auto", max_tokens=args.tokens)
    server = BackgroundServer(backend, ServerOptions(defaults), port=free_port())
    server.start()
    model = backend.models()[0]
    try:
        solo = {i: solo_text(host, i, args.tokens) for i in range(max(args.clients))}
        for side in SIDES:  # warm-up: kernels, the auto-K controller's first figures
            run_side(server.url, model, 1, args.tokens, side)
        print(
            f"pair: {target.name} + {draft.name}; max_batch {max_batch}; {args.tokens} tokens; reps {args.reps}; "
            "tok/s = tokens / wall time from the send (prefill included)\n",
            flush=True,
        )
        results = {}
        for n in args.clients:
            agg: dict[str, list[float]] = {side: [] for side in SIDES}
            clients: dict[str, list[ClientRun]] = {side: [] for side in SIDES}
            for rep in range(args.reps):
                order = list(SIDES) if rep % 2 == 0 else list(SIDES)[::-1]
                for side in order:
                    rate, runs = run_side(server.url, model, n, args.tokens, side)
                    for i, run in enumerate(runs):
                        assert run.text == solo[i], f"N={n} {side} client {i}: output differs from its solo output"
                    agg[side].append(rate)
                    clients[side].extend(runs)
                    print(f"  N={n} {side}: {rate:.1f} tok/s aggregate", file=sys.stderr, flush=True)
            results[n] = (agg, clients)
        print_table(results)
    finally:
        server.stop()
        host.shutdown()


def print_table(results: dict) -> None:
    """One Markdown row per N."""
    base = statistics.median(results[min(results)][0]["speculation"])
    print(
        "| clients | spec aggregate tok/s | plain aggregate tok/s | spec / plain aggregate | spec x N=1 spec "
        "| spec per-client tok/s min / median | plain per-client min / median | client spec / plain "
        "| rows max (mean) |"
    )
    print("|---" * 9 + "|")
    for n, (agg, clients) in results.items():
        spec, plain = clients["speculation"], clients["plain"]
        spec_rates, plain_rates = [r.rate for r in spec], [r.rate for r in plain]
        paired = [a.rate / b.rate for a, b in zip(spec, plain)]  # the same client, rep and prompt
        rows = max(r.rows_max for r in spec)
        mean_rows = statistics.mean(r.rows_mean for r in spec)
        agg_ratio = [a / b for a, b in zip(agg["speculation"], agg["plain"])]
        cells = [
            f"{statistics.median(agg['speculation']):.1f}",
            f"{statistics.median(agg['plain']):.1f}",
            spread(agg_ratio),
            f"{statistics.median(agg['speculation']) / base:.2f}x",
            f"{min(spec_rates):.1f} / {statistics.median(spec_rates):.1f}",
            f"{min(plain_rates):.1f} / {statistics.median(plain_rates):.1f}",
            spread(paired),
            f"{rows} ({mean_rows:.1f})",
        ]
        print(f"| {n} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
