"""Our server vs `mlx_lm.server` on the same dense pair, both speculating with the same K.

The same conversation (a first request, then follow-ups that repeat the history) goes to both
servers, request by request in turn (which one goes first alternates), streamed with the official
`openai` client. Per request: decode tokens/s (completion tokens over the time from first to last
chunk) and time to first token. Follow-ups show prefix reuse: each server has the history cached.

    python bench/server_vs_mlx_lm.py --rounds 5 --draft-tokens 2
    python bench/server_vs_mlx_lm.py --target $QWEN_TARGET --draft $QWEN_DRAFT   # a real pair
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from common import ROOT, Paired, build_cheap_draft_pair, median
from openai import OpenAI

TURNS = (
    "Write a Python function that merges two sorted lists, with a docstring.",
    "Now add type hints and a short test.",
    "Explain its complexity in two sentences.",
)


def start(command: list[str], port: int) -> subprocess.Popen:
    """Start a server process and wait until it answers /v1/models."""
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    deadline = time.time() + 600
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{command[2]} exited: {proc.stderr.read()[-2000:]}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1)
            return proc  # it answers (mlx_lm.server answers before its model has loaded: the warm-up waits)
        except httpx.HTTPError:
            time.sleep(0.5)
    raise RuntimeError(f"{command} did not start")


def ask(client: OpenAI, messages: list[dict], max_tokens: int) -> tuple[str, int, float, float]:
    """Stream one chat request: (text, completion tokens, TTFT s, decode tok/s)."""
    sent = time.perf_counter()
    first = last = None
    pieces, tokens = [], 0
    stream = client.chat.completions.create(
        model=client.model_name,
        messages=messages,
        max_tokens=max_tokens,
        temperature=0.0,
        stream=True,
        stream_options={"include_usage": True},
    )
    for chunk in stream:
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
        if chunk.choices and chunk.choices[0].delta.content:
            now = time.perf_counter()
            first = first or now
            last = now
            pieces.append(chunk.choices[0].delta.content)
    ttft = (first or sent) - sent
    decode = (tokens - 1) / (last - first) if first and last and last > first and tokens > 1 else 0.0
    return "".join(pieces), tokens, ttft, decode


def conversation(clients: dict, max_tokens: int, order: list[str]) -> dict:
    """One conversation on both servers, turn by turn in the given order; per server, per turn figures."""
    histories = {name: [] for name in clients}
    out = {name: [] for name in clients}
    for turn in TURNS:
        for name in order:
            histories[name].append({"role": "user", "content": turn})
            text, tokens, ttft, decode = ask(clients[name], histories[name], max_tokens)
            histories[name].append({"role": "assistant", "content": text})
            out[name].append((text, tokens, ttft, decode))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target")
    parser.add_argument("--draft")
    parser.add_argument("--draft-tokens", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    target, draft = (Path(args.target), Path(args.draft)) if args.target else build_cheap_draft_pair()
    k = str(args.draft_tokens)
    ports = {"ours": 18931, "mlx_lm": 18932}
    commands = {
        "ours": [
            sys.executable,
            "-m",
            "app",
            "serve",
            "--target",
            str(target),
            "--draft",
            str(draft),
            "--mode",
            "draft",
            "--draft-tokens",
            k,
            "--port",
            str(ports["ours"]),
        ],
        "mlx_lm": [
            sys.executable,
            "-m",
            "mlx_lm",
            "server",
            "--model",
            str(target),
            "--draft-model",
            str(draft),
            "--num-draft-tokens",
            k,
            "--port",
            str(ports["mlx_lm"]),
            "--log-level",
            "WARNING",
        ],
    }
    procs = {name: start(cmd, ports[name]) for name, cmd in commands.items()}
    try:
        clients = {}
        for name, port in ports.items():
            client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0, timeout=600)
            client.model_name = target.name if name == "ours" else "default_model"  # mlx_lm: its --model
            clients[name] = client
        conversation(clients, 8, ["ours", "mlx_lm"])  # warm-up: loads kernels, fills no figure
        runs = [
            conversation(clients, args.max_tokens, ["ours", "mlx_lm"] if r % 2 == 0 else ["mlx_lm", "ours"])
            for r in range(args.rounds)
        ]
    finally:
        for proc in procs.values():
            proc.terminate()
            proc.wait(30)
    report(runs, target, draft, args)


def report(runs: list[dict], target, draft, args) -> None:
    """Markdown rows: per turn, decode tok/s and TTFT of each server and their ratios."""
    same = all(run["ours"][t][0] == run["mlx_lm"][t][0] for run in runs for t in range(len(TURNS)))
    print(
        f"pair: {target.name} + {draft.name}, K={args.draft_tokens}, {args.rounds} rounds, "
        f"max_tokens {args.max_tokens}; identical text on every request: {'yes' if same else 'NO'}"
    )
    print(
        "| request | ours tok/s | mlx_lm tok/s | ratio (median of pairs) | 95% CI | ours TTFT s | mlx_lm TTFT s |"
        " TTFT ratio ours/mlx_lm |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for t, name in enumerate(("first", "follow-up 1", "follow-up 2")):
        speed = Paired([r["ours"][t][3] for r in runs], [r["mlx_lm"][t][3] for r in runs])
        ttft = Paired([r["ours"][t][2] for r in runs], [r["mlx_lm"][t][2] for r in runs])
        low, high = speed.ci()
        print(
            f"| {name} | {median(speed.a):.1f} | {median(speed.b):.1f} | {speed.ratio:.3f} | {low:.3f}-{high:.3f} |"
            f" {median(ttft.a):.3f} | {median(ttft.b):.3f} | {ttft.ratio:.3f} |"
        )


if __name__ == "__main__":
    main()
