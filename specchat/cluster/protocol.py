"""Jobs broadcast from rank 0, and the lockstep check every rank runs after each engine event.

A job travels as two all_sums (the other ranks add zeros): a header [kind, job id, payload length]
and a JSON payload as int32 bytes. After each engine event every rank gathers (cancel bit, tokens
so far, digest of those tokens): rank 0's cancel bit stops every rank at the same event, and a rank
whose tokens differ from rank 0's is named instead of drifting silently.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

import mlx.core as mx
import numpy as np

from specchat.engine.autok import AutoK
from specchat.engine.config import GenerationConfig
from specchat.engine.draft_stop import StopCosts
from specchat.engine.errors import EngineError
from specchat.engine.events import Event, Failed, TextChunk
from specchat.engine.modes import MODES

from .group import ClusterGroup

if TYPE_CHECKING:
    from specchat.engine.engine import Engine

GENERATE, PING, STOP, BATCH = 1, 2, 3, 4
HEADER = 3
DIGEST_MOD = 2_147_483_647  # a prime below 2**31

RankMemory = dict[str, int | str]  # one rank's rank, host, pid (and memory bytes) for the status


class ClusterError(EngineError):
    """The cluster cannot go on with this job: a rank went away, stalled, or disagreed."""


@dataclass(frozen=True)
class Job:
    """What rank 0 asks every rank to do."""

    kind: int
    id: int = 0
    prompt: tuple[int, ...] = ()
    cfg: GenerationConfig | None = None
    rows: int = 0  # BATCH: the most rows the batch holds


def shared_config(cfg: GenerationConfig) -> GenerationConfig:
    """cfg with a seed every rank uses: a sampled reply draws the same keys on every rank."""
    if cfg.temperature > 0 and cfg.seed is None:
        return replace(cfg, seed=secrets.randbits(31))
    return cfg


def send_job(group: ClusterGroup, job: Job) -> None:
    """Broadcast a job from rank 0."""
    body = {"prompt": list(job.prompt), "cfg": asdict(job.cfg) if job.cfg else None, "rows": job.rows}
    payload = np.frombuffer(json.dumps(body).encode(), np.uint8).astype(np.int32)
    group.broadcast(np.array([job.kind, job.id, payload.size], np.int32), HEADER)
    group.broadcast(payload, int(payload.size))


def receive_job(group: ClusterGroup) -> Job:
    """Wait for rank 0's next job (ranks > 0)."""
    kind, job_id, length = (int(v) for v in group.broadcast(None, HEADER))
    body = json.loads(group.broadcast(None, length).astype(np.uint8).tobytes())
    cfg = GenerationConfig(**body["cfg"]) if body["cfg"] else None
    return Job(kind, job_id, tuple(body["prompt"]), cfg, body["rows"])


def is_link_error(message: str) -> bool:
    """True for MLX's own messages about a lost peer (ring, JACCL, MPI)."""
    return any(tag in message for tag in ("[ring]", "[jaccl]", "[mpi]", "connection to a peer"))


def digest(tokens: Iterable[int], start: int = 0) -> int:
    """A rolling hash of token ids, continued from `start`."""
    for token in tokens:
        start = (start * 1_000_003 + int(token) + 1) % DIGEST_MOD
    return start


def carry_digest(engine: Engine) -> int:
    """A digest of the sequences the batch keeps on the engine for follow-ups (its prefix stores)."""
    value = 0
    for name in sorted(engine.batch_carry.prefixes):
        for entry in engine.batch_carry.prefixes[name].entries:
            value = digest([len(entry.tokens), *entry.tokens], value)
    return value


def align_engines(group: ClusterGroup, engine: Engine) -> bool:
    """Before a job: if any rank's cached tokens (or a batch's kept sequences) differ from rank 0's, every
    rank drops its caches (a different cache means a different prefill, whose collectives would pair with
    the wrong ones). True when they had to."""
    cached = list(engine.runner.tokens)
    rows = group.gather_ints([len(cached), digest(cached), carry_digest(engine)])
    if all(row == rows[0] for row in rows):
        return False
    engine.reset()
    return True


class Lockstep:
    """Wraps one rank's engine event stream: after each event the ranks agree on cancel and tokens."""

    def __init__(
        self, group: ClusterGroup, job_cancel: threading.Event | None = None, beat: Callable[[], None] | None = None
    ):
        self.group, self.job_cancel, self.beat = group, job_cancel, beat or (lambda: None)
        self.agreed_cancel = threading.Event()  # what the engine sees: set only where every rank sets it
        self.count = self.digest = 0

    def run(self, events: Iterator[Event]) -> Iterator[Event]:
        """Yield the events after checking each with the other ranks; ClusterError on disagreement."""
        for event in events:
            if isinstance(event, TextChunk):
                self.count += len(event.token_ids)
                self.digest = digest(event.token_ids, self.digest)
            if not (isinstance(event, Failed) and is_link_error(event.message)):
                self.sync()
            yield event

    def sync(self) -> None:
        """One gather: rank 0's cancel bit for everyone, and every rank's (count, digest) compared."""
        cancel = int(self.job_cancel is not None and self.job_cancel.is_set())
        rows = self.group.gather_ints([cancel, self.count, self.digest])
        self.beat()
        for rank, row in enumerate(rows[1:], start=1):
            if row[1:] != rows[0][1:]:
                raise ClusterError(
                    f"{self.group.where(rank)} generated different tokens from rank 0 "
                    f"({row[1]} vs {rows[0][1]} tokens so far): the ranks' arithmetic differs; "
                    "the reply was stopped"
                )
        if rows[0][0]:
            self.agreed_cancel.set()


def gather_memory(group: ClusterGroup) -> list[RankMemory]:
    """Every rank's MLX memory now and at its peak, by rank."""
    rows = group.gather_ints([mx.get_active_memory(), mx.get_peak_memory()])
    return [
        {"rank": r, "host": group.hosts[r], "pid": group.pids[r], "active_memory_bytes": a, "peak_memory_bytes": p}
        for r, (a, p) in enumerate(rows)
    ]


COST_SCALE = 1_000_000  # early-stop thresholds (expected tokens) travel as whole millionths


@dataclass
class SharedAutoK(AutoK):
    """Auto K whose choice is rank 0's: each rank measures its own costs, but all ranks use one K.

    AutoK decides from measured time, which differs between machines; a different K on one rank
    would pair its collectives with the wrong ones on the others."""

    group: ClusterGroup = field(kw_only=True)  # required; keyword-only since AutoK's fields have defaults

    def choose(self) -> int:
        """Rank 0's K for the next round, on every rank."""
        return self._rank0(super().choose())

    def burst_length(self) -> int:
        """Rank 0's plain burst length, on every rank (it follows rank 0's probing state)."""
        return self._rank0(super().burst_length())

    def stop_costs(self) -> StopCosts:
        """Rank 0's early-stop thresholds, on every rank: with the same confidences (the draft runs whole on
        every rank) and the same thresholds, every rank's draft stops at the same token."""
        mine = super().stop_costs()
        values = np.array([round(mine.keep_at * COST_SCALE), round(mine.go_on_at * COST_SCALE)])
        shared = self.group.broadcast(values if self.group.rank == 0 else None, 2)
        return StopCosts(float(shared[0]) / COST_SCALE, float(shared[1]) / COST_SCALE)

    def _rank0(self, mine: int) -> int:
        return int(self.group.broadcast(np.array([mine]) if self.group.rank == 0 else None, 1)[0])


def share_decisions(engine: Engine, group: ClusterGroup) -> None:
    """Make every timing-based decision of the engine rank 0's (today: auto K, per mode)."""
    engine.auto_k = {mode: SharedAutoK(group=group) for mode in MODES}
