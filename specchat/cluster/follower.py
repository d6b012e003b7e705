"""Ranks > 0: run rank 0's jobs on this rank's shard, in lockstep, until rank 0 stops or goes away."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from specchat.engine.config import GenerationConfig
from specchat.engine.engine import Engine
from specchat.engine.events import TextChunk

from .group import ClusterGroup
from .protocol import GENERATE, PING, STOP, ClusterError, Job, Lockstep, align_engines, gather_memory, receive_job


def follow(
    group: ClusterGroup,
    engine: Engine,
    log: Callable[[str], None] | None = None,
    record: Callable[[Job, list[int]], None] | None = None,
) -> int:
    """Serve rank 0's jobs; the process exit status (0 when rank 0 said stop, 1 when it went away).
    record(job, tokens), when given, gets each generation's tokens (tests compare them with rank 0's)."""
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
            if job.kind in (GENERATE, PING):
                gather_memory(group)
        except RuntimeError as exc:  # MLX: the link to a peer is gone
            log(f"specchat cluster: {group.where(group.rank)} lost rank 0 ({exc}); stopping")
            return 1


def follow_generation(group: ClusterGroup, engine: Engine, prompt: Sequence[int], cfg: GenerationConfig) -> list[int]:
    """Run one generation on this rank as rank 0 runs it; the tokens this rank produced."""
    align_engines(group, engine)
    lock = Lockstep(group)
    tokens: list[int] = []
    try:
        for event in lock.run(engine.stream(list(prompt), cfg, lock.agreed_cancel)):
            if isinstance(event, TextChunk):
                tokens.extend(event.token_ids)
    except ClusterError:
        engine.reset()  # rank 0 raised the same error at the same event
    return tokens
