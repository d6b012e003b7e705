"""A target sharded over 2 ranks (ring backend on this machine) vs one process: memory per rank, tokens/s.

The target's weights should split about evenly (embeddings, norms and the draft stay whole on every
rank). On one machine the 2 ranks share its cores and talk over loopback TCP, so tokens/s measures the
cost of the lockstep protocol, not a speed-up: between Macs each rank has its own memory bandwidth.
Run: python bench/cluster_ranks.py [--kind dense|hybrid] [--tokens 96]
(it runs itself under `mlx.launch --backend ring -n 2` for the 2-rank figures)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import mlx.core as mx
from common import ROOT, build_cheap_draft_pair

from specchat.engine import Engine, GenerationConfig
from specchat.engine.events import Finished

MB = 1e6
MODES = ({"mode": "baseline"}, {"mode": "draft", "num_draft_tokens": 3})


def measure(engine_factory, lead=None) -> dict:
    """Memory after load, peak, and tokens/s per mode (lead runs a generation on every rank)."""
    mx.reset_peak_memory()
    engine = engine_factory()
    loaded = mx.get_active_memory()
    speeds = {}
    for spec in MODES:
        cfg = GenerationConfig(max_tokens=ARGS.tokens, **spec)
        events = lead(engine, cfg) if lead else engine.stream(list(range(5, 37)), cfg)
        stats = [e for e in events if isinstance(e, Finished)][0].stats
        speeds[spec["mode"]] = round(stats.decode_tokens_per_s, 1)
    return {"loaded_bytes": loaded, "peak_bytes": mx.get_peak_memory(), "tokens_per_s": speeds}


def rank_main(target: str, draft: str, out: str) -> int:
    """One rank of the 2-rank run: rank 0 leads and writes every rank's figures."""
    from specchat.cluster.follower import follow
    from specchat.cluster.group import ClusterGroup
    from specchat.cluster.leader import ClusterState, lead_generation, stop_followers
    from specchat.cluster.serve import build_engine

    group = ClusterGroup.init()
    if group.rank > 0:
        mx.reset_peak_memory()
        engine = build_engine(group, target, draft)
        loaded = mx.get_active_memory()
        follow(group, engine)
        group.gather_ints([loaded, mx.get_peak_memory()])
        return 0
    state = ClusterState(group, 120)
    figures = measure(
        lambda: build_engine(group, target, draft),
        lambda engine, cfg: lead_generation(state, engine, list(range(5, 37)), cfg, threading.Event()),
    )
    stop_followers(state)
    rows = group.gather_ints([figures["loaded_bytes"], figures["peak_bytes"]])
    Path(out).write_text(json.dumps({"rank0": figures, "ranks": rows}))
    return 0


def main() -> None:
    target, draft = build_cheap_draft_pair(ARGS.kind, hidden=1024, layers=8, draft_layers=2)
    single = measure(lambda: Engine.load(target, draft))
    out = Path(tempfile.mkdtemp()) / "ranks.json"
    launch = [
        str(Path(sys.executable).with_name("mlx.launch")),
        "--backend",
        "ring",
        "-n",
        "2",
        "--python",
        sys.executable,
        "--",
        str(Path(__file__)),
        "--kind",
        ARGS.kind,
        "--tokens",
        str(ARGS.tokens),
        "--rank-run",
        str(target),
        str(draft),
        str(out),
    ]
    subprocess.run(launch, cwd=ROOT, check=True, timeout=900)
    cluster = json.loads(out.read_text())
    print(f"{ARGS.kind} target (hidden 1024, 8 layers) + 2-layer draft, {ARGS.tokens} tokens, this machine")
    print("| run | memory after load per rank (MB) | peak per rank (MB) | baseline tok/s | draft K=3 tok/s |")
    print("|---|---|---|---|---|")
    speeds = single["tokens_per_s"]
    print(
        f"| 1 process | {single['loaded_bytes'] / MB:.0f} | {single['peak_bytes'] / MB:.0f} | "
        f"{speeds['baseline']} | {speeds['draft']} |"
    )
    loaded = " / ".join(f"{row[0] / MB:.0f}" for row in cluster["ranks"])
    peak = " / ".join(f"{row[1] / MB:.0f}" for row in cluster["ranks"])
    speeds = cluster["rank0"]["tokens_per_s"]
    print(f"| 2 ranks (ring, localhost) | {loaded} | {peak} | {speeds['baseline']} | {speeds['draft']} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=("dense", "hybrid"), default="dense")
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--rank-run", nargs=3, metavar=("TARGET", "DRAFT", "OUT"))
    ARGS = parser.parse_args()
    sys.exit(rank_main(*ARGS.rank_run) if ARGS.rank_run else main())
