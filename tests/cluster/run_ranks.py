"""Run under `mlx.launch --backend ring -n 2`: every setup's cases on a sharded target, in lockstep.

argv: a JSON file [{"target": DIR, "draft": DIR|null, "cases": [GenerationConfig fields + "prompt"]}], and
an output folder where each rank writes rank<R>.json: {"tokens": [[...] per case], "memory": [...]}.
"""

import json
import sys
import threading
from pathlib import Path

from specchat.cluster.follower import follow
from specchat.cluster.group import ClusterGroup
from specchat.cluster.leader import ClusterState, lead_generation, ping, stop_followers
from specchat.cluster.serve import build_engine
from specchat.engine.config import GenerationConfig
from specchat.engine.events import TextChunk


def main() -> int:
    setups = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    group = ClusterGroup.init()
    assert group is not None and group.size == 2, "run me with mlx.launch -n 2"
    results = {"tokens": [], "hosts": group.hosts}
    for setup in setups:
        engine = build_engine(group, setup["target"], setup.get("draft"))
        if group.rank == 0:
            state = ClusterState(group, rank_timeout_s=30)
            for case in setup["cases"]:
                fields = {k: v for k, v in case.items() if k not in ("prompt", "cancel_after", "drift")}
                if case.get("drift"):  # rank 0's caches no longer match the others': they must realign
                    engine.reset()
                results["tokens"].append(lead(state, engine, case, GenerationConfig(**fields)))
            results["memory"] = ping(state)
            stop_followers(state)
        else:
            status = follow(group, engine, record=lambda job, tokens: results["tokens"].append(tokens))
            assert status == 0, status
    (out / f"rank{group.rank}.json").write_text(json.dumps(results))
    return 0


def lead(state, engine, case: dict, cfg: GenerationConfig) -> list[int]:
    """Rank 0's tokens for one case; with "cancel_after": n, cancel once n chunks have arrived."""
    cancel, tokens, chunks = threading.Event(), [], 0
    for event in lead_generation(state, engine, case["prompt"], cfg, cancel):
        if isinstance(event, TextChunk):
            tokens.extend(event.token_ids)
            chunks += 1
            if chunks == case.get("cancel_after"):
                cancel.set()
    return tokens


if __name__ == "__main__":
    sys.exit(main())
