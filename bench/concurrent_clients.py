"""Many clients at once: N concurrent streaming chat clients against `serve`'s batched decoding, with
speculation on (mode draft, auto K) and with plain decoding (mode baseline), side by side in one run.

    source ../shared/tools/real-qwen-pair.env        # QWEN_TARGET, QWEN_DRAFT
    python bench/concurrent_clients.py --clients 1 2 4 8 --tokens 64 --reps 3
    python bench/concurrent_clients.py --clients 1 2 4 8 --reps 3 --mix lengths,modes
    python bench/concurrent_clients.py --solo-vs-server --tokens 256 --reps 6
    python bench/concurrent_clients.py --tiny --reps 1  # a quick smoke on the test fixtures

The server runs in-process on loopback (`EngineBackend` with --max-batch, default the largest N). For
each N, client i streams prompt i (code and prose, greedy, max_tokens --tokens); all N send at once.
--mix lengths gives the clients prompts of 50 to 2,000 tokens instead (stdlib source with a task) and
--mix modes has the speculating clients take draft, lookup and mtp in turn (bench/batch_prompts.py).
Each rep runs both sides back to back, the side that goes first alternating, so a slow spell of the
machine hits both; before each side the engine drops its caches (Engine.reset), so neither side's
prompts are served from the other's prefill. Per N it prints the aggregate tok/s (every client's
tokens / the wall time from the first send to the last token) of each side, speculation's aggregate
over N=1's, the per-client tok/s (tokens / that client's own wall time) min and median, each client's
rate over its rate in the plain batch (median [min-max] over clients and reps) and the median time to
first text, then whether speculation / plain >= 1.00x held.
Every greedy output must equal its solo output (asserted; solo = the engine alone on the same prompt).

--solo-vs-server instead times one client through the server against the engine's own loop (Engine.stream
on the engine thread, same prompt, mode draft auto K) in pairs run back to back, which goes first
alternating (both use the one engine thread, so they cannot step in lockstep); it prints server / solo of
the decode tok/s (past the first visible text) as seen by the caller, and as the engine reports it.
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
from batch_prompts import PROMPTS, Client, chat_ids, client_plans, messages, parse_mix, solo_replies
from common import ROOT, paired_runs

from specchat.engine import Failed, Finished, GenerationConfig, TextChunk
from specchat.engine.modes import SpecMode
from specchat.engine.owner import EngineHost, load_pair_job
from specchat.server.app import ServerOptions
from specchat.server.backend import EngineBackend
from specchat.server.running import BackgroundServer, free_port

SIDES = ("speculation", "plain")
SERVER_OVER_SOLO_GOAL = 0.98


@dataclass(frozen=True)
class ClientRun:
    """One client's streamed reply: text, tokens, times from its send (first visible text, last text, end),
    the batch size it ran at and the decode tok/s the engine reported."""

    text: str
    tokens: int
    seconds: float
    first_text: str
    first_s: float
    last_s: float
    rows_max: int
    rows_mean: float
    engine_decode: float

    @property
    def rate(self) -> float:
        return self.tokens / self.seconds


def tiny_pair() -> tuple[Path, Path, Path]:
    """The tests' tiny dense target, its partly agreeing draft and a random DFlash drafter, in a temp folder."""
    sys.path.insert(0, str(ROOT))
    from tests.fixtures import tiny_models as tm
    from tests.fixtures.dflash_models import build_dflash

    root = Path(tempfile.mkdtemp(prefix="specchat-bench-clients-"))
    target = tm.build_dense(root / "dense_target", seed=0)
    draft = tm.build_dense(root / "dense_draft_partial", seed=1, base=target)
    return target, draft, build_dflash(root / "dflash", target)


def speculation(side: str, client: Client) -> dict[str, str]:
    """The request's speculation object: the client's mode with auto K, or plain decoding."""
    return {"mode": client.mode, "num_draft_tokens": "auto"} if side == "speculation" else {"mode": "baseline"}


def stream_one(url: str, model: str, client: Client, side: str, tokens: int, start: threading.Barrier) -> ClientRun:
    """One client: wait for the others, then stream its chat and time it."""
    body = {
        "model": model,
        "messages": messages(client.content),
        "max_tokens": tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
        "speculation": speculation(side, client),
    }
    text: list[str] = []
    usage, first_s, last_s = None, 0.0, 0.0
    with httpx.Client(timeout=600) as http:
        start.wait()
        began = time.perf_counter()
        with http.stream("POST", url + "/v1/chat/completions", json=body) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                if "error" in chunk:
                    raise RuntimeError(f"{client.mode} client: {chunk['error']}")
                content = chunk["choices"][0]["delta"].get("content") if chunk.get("choices") else None
                if content:
                    last_s = time.perf_counter() - began
                    first_s = first_s or last_s
                    text.append(content)
                if chunk.get("usage"):
                    usage = chunk["usage"]
        seconds = time.perf_counter() - began
    assert usage is not None and text, "no usage chunk or no text"
    spec = usage["speculation"]
    return ClientRun(
        "".join(text), usage["completion_tokens"], seconds, text[0], first_s, last_s,
        spec["batch_rows_max"], spec["batch_rows_mean"], spec["decode_tokens_per_s"],
    )  # fmt: skip


def run_side(url: str, model: str, clients: list[Client], tokens: int, side: str) -> tuple[float, list[ClientRun]]:
    """The clients at once on one side: (aggregate tok/s, each client's run)."""
    start = threading.Barrier(len(clients) + 1)
    runs: dict[int, ClientRun | BaseException] = {}

    def client(i: int) -> None:
        try:
            runs[i] = stream_one(url, model, clients[i], side, tokens, start)
        except BaseException as exc:  # re-raised below, in the main thread
            runs[i] = exc

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    ordered = [runs[i] for i in range(len(clients))]
    for outcome in ordered:
        if isinstance(outcome, BaseException):
            raise outcome
    done = [r for r in ordered if isinstance(r, ClientRun)]
    return sum(r.tokens for r in done) / wall, done


def forget_caches(host: EngineHost) -> None:
    """Drop every cache the engine keeps (its own loop's, finished batch rows'), what it learned stays: each
    side's requests are new to the engine, both pay their prefill."""
    host.submit("bench-forget-caches", lambda ctx: ctx.engine.reset()).result()


def spread(values: list[float]) -> str:
    """'median [min-max]' of ratios."""
    values = sorted(values)
    return f"{statistics.median(values):.2f} [{values[0]:.2f}-{values[-1]:.2f}]"


def many_clients(args, host: EngineHost, url: str, model: str, label: str) -> None:
    """The N-clients table: both sides per rep, every output checked against its solo output."""
    plan, header = client_plans(host, args.clients, args.mix, args.tokens)
    solo = solo_replies(host, {c.content for clients in plan.values() for c in clients}, args.tokens)
    for side in SIDES:  # warm-up: kernels, the auto-K controller's first figures
        run_side(url, model, plan[min(plan)][:1], args.tokens, side)
    mix = ",".join(sorted(args.mix)) or "none (default prompts, mode draft)"
    print(f"{label}; {args.tokens} tokens; reps {args.reps}; mix {mix}\n{header}", flush=True)
    print("tok/s = tokens / wall time from the send (prefill included)\n", flush=True)
    results = {}
    for n, clients in plan.items():
        agg: dict[str, list[float]] = {side: [] for side in SIDES}
        runs_of: dict[str, list[ClientRun]] = {side: [] for side in SIDES}
        for rep in range(args.reps):
            for side in SIDES if rep % 2 == 0 else SIDES[::-1]:
                forget_caches(host)
                rate, runs = run_side(url, model, clients, args.tokens, side)
                for client, run in zip(clients, runs):
                    assert run.text == solo[client.content][0], f"N={n} {side} {client.mode}: output differs from solo"
                agg[side].append(rate)
                runs_of[side].extend(runs)
                firsts = " ".join(f"{r.first_s:.1f}" for r in runs)
                print(
                    f"  N={n} {side}: {rate:.1f} tok/s aggregate, first text at s {firsts}", file=sys.stderr, flush=True
                )
        results[n] = (agg, runs_of)
    print_table(results)


def print_table(results: dict) -> None:
    """One Markdown row per N, then one line per N on whether speculation kept up with plain decoding."""
    base = statistics.median(results[min(results)][0]["speculation"])
    print(
        "| clients | spec aggregate tok/s | plain aggregate tok/s | spec / plain aggregate | spec x N=1 spec "
        "| spec per-client tok/s min / median | plain per-client min / median | client spec / plain "
        "| first text s spec / plain | rows max (mean) |"
    )
    print("|---" * 10 + "|")
    for n, (agg, clients) in results.items():
        spec, plain = clients["speculation"], clients["plain"]
        spec_rates, plain_rates = [r.rate for r in spec], [r.rate for r in plain]
        paired = [a.rate / b.rate for a, b in zip(spec, plain)]  # the same client, rep and prompt
        cells = [
            f"{statistics.median(agg['speculation']):.1f}",
            f"{statistics.median(agg['plain']):.1f}",
            spread(aggregate_ratios(agg)),
            f"{statistics.median(agg['speculation']) / base:.2f}x",
            f"{min(spec_rates):.1f} / {statistics.median(spec_rates):.1f}",
            f"{min(plain_rates):.1f} / {statistics.median(plain_rates):.1f}",
            spread(paired),
            f"{statistics.median(r.first_s for r in spec):.1f} / {statistics.median(r.first_s for r in plain):.1f}",
            f"{max(r.rows_max for r in spec)} ({statistics.mean(r.rows_mean for r in spec):.1f})",
        ]
        print(f"| {n} | " + " | ".join(cells) + " |", flush=True)
    print()
    for n, (agg, _) in results.items():
        ratios = aggregate_ratios(agg)
        held = "held" if statistics.median(ratios) >= 1.0 else "did NOT hold"
        reps = sum(r >= 1.0 for r in ratios)
        print(f"N={n}: speculation / plain aggregate {spread(ratios)}: >= 1.00x {held} ({reps}/{len(ratios)} reps)")


def aggregate_ratios(agg: dict[str, list[float]]) -> list[float]:
    return [a / b for a, b in zip(agg["speculation"], agg["plain"])]


def solo_loop(host: EngineHost, content: str, tokens: int, reference: str) -> tuple[float, float]:
    """The engine's own loop on the prompt (mode draft, auto K): (decode tok/s past the first visible text as
    the caller sees it, decode tok/s as the engine reports it)."""

    def work(ctx) -> tuple[float, float]:
        cfg = GenerationConfig(mode=SpecMode.DRAFT, num_draft_tokens="auto", max_tokens=tokens)
        text, produced, first, first_tokens, last, reported = "", 0, 0.0, 0, 0.0, 0.0
        for event in ctx.engine.stream(chat_ids(ctx.engine, content), cfg):
            if isinstance(event, TextChunk):
                produced, text = produced + len(event.token_ids), text + event.text
                if event.text:  # timed as the server's client times its content deltas
                    last = time.perf_counter()
                    first, first_tokens = (first, first_tokens) if first else (last, produced)
            elif isinstance(event, Failed):
                raise RuntimeError(event.message)
            elif isinstance(event, Finished):
                reported = event.stats.decode_tokens_per_s
        assert text == reference, "solo loop: output differs from the greedy reply"
        return (produced - first_tokens) / (last - first), reported

    result: tuple[float, float] = host.submit("bench-solo-loop", work).result()
    return result


def solo_vs_server(args, host: EngineHost, url: str, model: str, label: str) -> None:
    """One client through the server against the engine's own loop, in pairs; server / solo of decode tok/s."""
    content = PROMPTS[0]
    reference, prefixes = solo_replies(host, {content}, args.tokens)[content]
    tokens_at = {text: produced for produced, text in reversed(prefixes)}  # a text -> the fewest tokens behind it
    client, engine_rates = Client(content), {"server": list[float](), "solo": list[float]()}

    def server() -> float:
        _, (run,) = run_side(url, model, [client], args.tokens, "speculation")
        assert run.text == reference, "server: output differs from the greedy reply"
        engine_rates["server"].append(run.engine_decode)
        return (run.tokens - tokens_at[run.first_text]) / (run.last_s - run.first_s)

    def solo() -> float:
        caller, engine = solo_loop(host, content, args.tokens, reference)
        engine_rates["solo"].append(engine)
        return caller

    paired_runs(server, solo, 1)  # warm-up
    for rates in engine_rates.values():
        rates.clear()
    paired = paired_runs(server, solo, args.reps)
    print(f"{label}; one client, prompt 0, mode draft auto K, {args.tokens} tokens; {args.reps} pairs back to back")
    print("decode tok/s: past the first visible text\n")
    print("| decode tok/s | server | solo loop | server / solo median [min-max] |\n|---|---|---|---|")
    print(f"| as the caller sees it | {statistics.median(paired.a):.1f} | {statistics.median(paired.b):.1f} "
          f"| {spread(paired.ratios)} |")  # fmt: skip
    engine = [a / b for a, b in zip(engine_rates["server"], engine_rates["solo"])]
    print(f"| as the engine reports it | {statistics.median(engine_rates['server']):.1f} "
          f"| {statistics.median(engine_rates['solo']):.1f} | {spread(engine)} |")  # fmt: skip
    held = "held" if paired.ratio >= SERVER_OVER_SOLO_GOAL else "did NOT hold"
    print(f"\nserver / solo decode {spread(paired.ratios)}: >= {SERVER_OVER_SOLO_GOAL:.2f}x {held}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default=os.environ.get("QWEN_TARGET"))
    parser.add_argument("--draft", default=os.environ.get("QWEN_DRAFT"))
    parser.add_argument("--dflash", help="a DFlash drafter folder for the target (--mix modes gives it clients too)")
    parser.add_argument("--tiny", action="store_true", help="the tests' tiny dense pair (a quick smoke)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--tokens", type=int, default=64, help="max_tokens of every request")
    parser.add_argument("--reps", type=int, default=1, help="paired reps per N (pairs with --solo-vs-server)")
    parser.add_argument("--max-batch", type=int, default=None, help="default: the largest --clients")
    parser.add_argument("--mix", type=parse_mix, default=frozenset(), help="lengths, modes or lengths,modes")
    parser.add_argument("--solo-vs-server", action="store_true", help="one client: the server vs the solo loop")
    args = parser.parse_args()
    dflash = Path(args.dflash) if args.dflash else None
    if args.tiny:
        target, draft, dflash = tiny_pair()
    elif args.target and args.draft and Path(args.target).is_dir() and Path(args.draft).is_dir():
        target, draft = Path(args.target), Path(args.draft)
    else:
        sys.exit("no pair: give --target and --draft (or QWEN_TARGET / QWEN_DRAFT), or --tiny")
    host = EngineHost()
    host.submit("load", load_pair_job(target, draft, keep_target_on_bad_draft=False, dflash=dflash)).result()
    max_batch = args.max_batch or max(args.clients)
    backend = EngineBackend(host, max_queue=max(args.clients), max_batch=max_batch)
    defaults = GenerationConfig(mode=SpecMode.DRAFT, num_draft_tokens="auto", max_tokens=args.tokens)
    server = BackgroundServer(backend, ServerOptions(defaults), port=free_port())
    server.start()
    label = f"pair: {target.name} + {draft.name}; max_batch {max_batch}"
    try:
        bench = solo_vs_server if args.solo_vs_server else many_clients
        bench(args, host, server.url, backend.models()[0], label)
    finally:
        server.stop()
        host.shutdown()


if __name__ == "__main__":
    main()
