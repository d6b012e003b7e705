"""Run under `mlx.launch --backend ring -n 2`: concurrent requests through ClusterBackend, decoded in one batch.

argv: a JSON file [{"target": DIR, "draft": DIR|null, "requests": [GenerationConfig fields + "prompt"
(+ "cancel_after": n chunks)]}], and an output folder. Each setup's requests are queued behind a job that
holds the engine, then released together. rank0.json: per request its tokens, stop reason and most rows
per round, then one lone request (the batch path with a single row); rank1.json: each batch row's
(prompt, tokens) as the follower produced them.
"""

import json
import sys
import threading
from pathlib import Path

from specchat.cluster.backend import ClusterBackend
from specchat.cluster.follower import follow
from specchat.cluster.group import ClusterGroup
from specchat.cluster.leader import ClusterState, stop_followers
from specchat.cluster.serve import build_engine, load_job
from specchat.engine.config import GenerationConfig
from specchat.engine.events import Finished, TextChunk
from specchat.engine.owner import EngineHost, JobProgress

WAIT_S = 300.0


class Reply:
    """One request's events as its consumer sees them; cancels its job after cancel_after chunks."""

    def __init__(self, backend: ClusterBackend, cancel_after: int | None):
        self.backend, self.cancel_after = backend, cancel_after
        self.tokens, self.chunks, self.finished = [], 0, None
        self.handle = None

    def __call__(self, event) -> None:
        if not isinstance(event, JobProgress):
            return
        if isinstance(event.event, TextChunk):
            self.tokens.extend(event.event.token_ids)
            self.chunks += 1
            if self.chunks == self.cancel_after:
                self.backend.cancel(self.handle)
        elif isinstance(event.event, Finished):
            self.finished = event.event.stats

    def result(self) -> dict:
        assert self.handle.wait(WAIT_S), "the request did not end"
        stats = self.finished
        return {
            "tokens": self.tokens,
            "stop": stats.stop_reason if stats else None,
            "rows_max": stats.batch_rows_max if stats else 0,
        }


def start(backend: ClusterBackend, request: dict) -> Reply:
    fields = {k: v for k, v in request.items() if k not in ("prompt", "cancel_after")}
    reply = Reply(backend, request.get("cancel_after"))
    reply.handle = backend.start(request["prompt"], GenerationConfig(**fields), reply)
    return reply


def lead(group: ClusterGroup, setup: dict) -> dict:
    """Rank 0: load, queue every request behind a hold, release them together, then one lone request."""
    host = EngineHost()
    state = ClusterState(group, rank_timeout_s=WAIT_S)
    backend = ClusterBackend(host, max_queue=16, state=state, heartbeat_s=3600, max_batch=4)
    host.submit("load", load_job(group, setup["target"], setup.get("draft"))).result()
    gate = threading.Event()
    hold = host.submit("hold", lambda ctx: gate.wait(WAIT_S))
    replies = [start(backend, request) for request in setup["requests"]]
    gate.set()
    assert hold.wait(WAIT_S)
    batch = [reply.result() for reply in replies]
    alone = start(backend, setup["requests"][0]).result()
    host.submit("cluster-stop", lambda ctx: stop_followers(state)).wait(WAIT_S)
    host.shutdown()
    return {"batch": batch, "alone": alone, "degraded": state.degraded}


def main() -> int:
    setups = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    group = ClusterGroup.init()
    assert group is not None and group.size == 2, "run me with mlx.launch -n 2"
    results = []
    for setup in setups:
        if group.rank == 0:
            results.append(lead(group, setup))
        else:
            rows = []
            engine = build_engine(group, setup["target"], setup.get("draft"))
            status = follow(group, engine, record=lambda job, tokens: rows.append([list(job.prompt), tokens]))
            assert status == 0, status
            results.append(rows)
    (out / f"rank{group.rank}.json").write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
