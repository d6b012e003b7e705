"""Ranks > 0: run rank 0's jobs (generations, batches) on this rank's shard, in lockstep, until rank 0 stops."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from specchat.engine.config import GenerationConfig
from specchat.engine.engine import Engine
from specchat.engine.events import TextChunk

from .batch_steps import Joined, RankBatch, receive_step
from .group import ClusterGroup
from .protocol import (
    BATCH,
    GENERATE,
    PING,
    STOP,
    ClusterError,
    Job,
    Lockstep,
    align_engines,
    gather_memory,
    receive_job,
)

Record = Callable[[Job, list[int]], None]


def follow(
    group: ClusterGroup,
    engine: Engine,
    log: Callable[[str], None] | None = None,
    record: Record | None = None,
) -> int:
    """Serve rank 0's jobs; the process exit status (0 when rank 0 said stop, 1 when it went away).
    record(job, tokens), when given, gets each generation's tokens (tests compare them with rank 0's); a
    batch's rows come as Job(BATCH, serial, prompt, cfg), each as it ends."""
    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    while True:
        try:
            job = receive_job(group)
            if job.kind == STOP:
                return 0
            if job.kind == GENERATE:
                assert job.cfg is not None  # send_job sends every generation with its config
                tokens = follow_generation(group, engine, job.prompt, job.cfg)
                if record is not None:
                    record(job, tokens)
            if job.kind == BATCH:
                follow_batch(group, engine, job.rows, record)
            if job.kind in (GENERATE, PING, BATCH):
                gather_memory(group)
        except ClusterError:  # rank 0 raised the same error at the same check, and skips the memory gather
            engine.reset()
        except RuntimeError as exc:  # MLX: the link to a peer is gone
            log(f"specchat cluster: {group.where(group.rank)} lost rank 0 ({exc}); stopping")
            return 1


def follow_generation(group: ClusterGroup, engine: Engine, prompt: Sequence[int], cfg: GenerationConfig) -> list[int]:
    """Run one generation on this rank as rank 0 runs it; the tokens this rank produced (ClusterError where
    rank 0 raises it too)."""
    align_engines(group, engine)
    lock = Lockstep(group)
    tokens: list[int] = []
    for event in lock.run(engine.stream(list(prompt), cfg, lock.agreed_cancel)):
        if isinstance(event, TextChunk):
            tokens.extend(event.token_ids)
    return tokens


def follow_batch(group: ClusterGroup, engine: Engine, max_batch: int, record: Record | None = None) -> None:
    """Run rank 0's batch on this rank, one step message and decoder step at a time, until no row is left."""
    align_engines(group, engine)
    batch = RankBatch(group, engine, max_batch)
    joined: dict[int, Joined] = {}
    while True:
        message = receive_step(group)
        joined.update((j.serial, j) for j in message.joined)
        batch.apply(message)
        for row in batch.step():
            request = joined.pop(row.serial)
            if record is not None:
                record(Job(BATCH, row.serial, request.prompt, request.cfg), row.tokens)
        if batch.over:
            return
