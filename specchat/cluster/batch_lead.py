"""Rank 0's batch: the host's batch loop (engine/owner/batch_job.py) steps every rank's decoder at once.

`ClusterBatchApi` is the decoder API a cluster's joinable jobs name (JoinSpec.decoder): its decoder,
`LeadBatch`, takes requests like a BatchDecoder but only queues them; each step() first broadcasts
what changed (the requests that joined, the rows whose client cancelled), then steps this rank's
decoder, as every other rank does (batch_steps.py). The first step of a batch broadcasts a BATCH job;
the step after which no row is left ends it on every rank.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from specchat.engine.batch.decoder import BatchRequest, batch_refusal
from specchat.engine.config import GenerationConfig
from specchat.engine.events import Event

from .batch_steps import Joined, RankBatch, StepMessage, send_step
from .leader import ClusterState
from .protocol import BATCH, ClusterError, Job, align_engines, gather_memory, send_job, shared_config

if TYPE_CHECKING:
    from specchat.engine.engine import Engine

Fault = Callable[[str], None]  # the watchdog's call when a rank stalls: fail every running row


class LeadBatch:
    """Rank 0's decoder for one batch loop: every step is broadcast, then run, on every rank."""

    def __init__(self, state: ClusterState, engine: Engine, max_batch: int, on_fault: Fault | None = None):
        self.state, self.engine, self.max_batch, self.on_fault = state, engine, max(1, max_batch), on_fault
        self.batch: RankBatch | None = None
        self.pending: list[tuple[int, BatchRequest]] = []  # added since the last step
        self.client_cancel: dict[int, threading.Event] = {}  # each running row's own cancel, by serial
        self.serials = itertools.count(1)

    @property
    def active(self) -> int:
        """Requests added and not yet ended."""
        return len(self.pending) + (self.batch.decoder.active if self.batch is not None else 0)

    @property
    def room(self) -> int:
        """How many more requests may join now."""
        return self.max_batch - self.active

    def add(self, request: BatchRequest) -> None:
        """Take a request in: it joins on every rank at the next step."""
        self.pending.append((next(self.serials), request))

    def step(self) -> None:
        """Broadcast what changed, then one decoder step on every rank; ClusterError when the cluster cannot go
        on (the host's batch loop then fails every row with it)."""
        group = self.state.group
        if self.state.degraded:
            raise ClusterError(self.state.degrade(self.state.degraded))
        try:
            batch = self.batch or self._begin()
            message, deliver = self._message()
            send_step(group, message)
            batch.apply(message, deliver)
            for row in batch.step():
                self.client_cancel.pop(row.serial, None)
            self.state.beat()
            if batch.over:
                self._end()
        except ClusterError:
            self._abort()
            raise
        except RuntimeError as exc:  # a collective lost its peer (LinkLost, or MLX's own error)
            self._abort()
            raise ClusterError(self.state.degrade(f"lost the link to {group.others()} ({exc})")) from None

    def _begin(self) -> RankBatch:
        self.state.begin(self.on_fault)
        send_job(self.state.group, Job(BATCH, rows=self.max_batch))
        align_engines(self.state.group, self.engine)
        self.batch = RankBatch(self.state.group, self.engine, self.max_batch)
        return self.batch

    def _message(self) -> tuple[StepMessage, dict[int, Callable[[Event], None]]]:
        """The requests that join now and the rows whose client cancelled since the last step."""
        joined = tuple(Joined(s, tuple(r.prompt), shared_config(r.cfg)) for s, r in self.pending)
        deliver = {s: r.emit for s, r in self.pending}
        self.client_cancel.update({s: r.cancel for s, r in self.pending})
        self.pending = []
        rows = self.batch.rows if self.batch is not None else {}
        cancelled = tuple(
            s
            for s, cancel in self.client_cancel.items()
            if cancel.is_set() and (s not in rows or not rows[s].cancel.is_set())  # not yet said
        )
        return StepMessage(joined, cancelled), deliver

    def _end(self) -> None:
        """Every row ended on every rank: rank 0 learns the ranks' memory, and the batch is over."""
        self.state.memory = gather_memory(self.state.group)
        self.batch = None
        self.state.end()

    def _abort(self) -> None:
        self.batch, self.pending = None, []
        self.client_cancel.clear()
        self.engine.reset()
        self.state.end()


class ClusterBatchApi:
    """The batch decoder API (engine/owner/batch_job.py's DecoderApi) for a cluster's joinable jobs."""

    BatchRequest: Any = BatchRequest

    def __init__(self, state: ClusterState, on_fault: Fault | None = None):
        self.state, self.on_fault = state, on_fault
        self.BatchDecoder: Any = self._decoder

    def batch_refusal(self, engine: Any, cfg: GenerationConfig) -> str | None:
        """Why this config runs alone (a solo generation in lockstep); None when it joins the batch."""
        return batch_refusal(engine, cfg)

    def _decoder(self, engine: Engine, max_batch: int) -> LeadBatch:
        return LeadBatch(self.state, engine, max_batch, self.on_fault)
