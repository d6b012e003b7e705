"""A batch in lockstep: every rank runs the same BatchDecoder steps, with the same rows joining and cancelled.

Before each step rank 0 broadcasts a step message: the requests that join at this step (a serial
number, prompt ids and config) and the serials of the rows cancelled since the last one. Every rank
applies it to its own decoder, steps, then the ranks gather (rows active, rows tracked, a digest of
every row's serial, token count and token digest) and compare. A row's cancel event, the one its
decoder sees, is set only by a step message, so every rank ends it at the same step. Rank 0 holds a
step's events until that check passed: a client never sees a token the other ranks disagree with.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from specchat.engine.batch.batch_k import BatchK
from specchat.engine.batch.decoder import BatchDecoder, BatchRequest
from specchat.engine.config import GenerationConfig
from specchat.engine.events import Event, Failed, Finished, TextChunk
from specchat.engine.policy import DEFAULT_POLICY

from .group import ClusterGroup, LinkLost
from .protocol import ClusterError, digest, is_link_error

if TYPE_CHECKING:
    from specchat.engine.engine import Engine

NO_TIME = -1  # a round time that was not measured (None), on the wire


@dataclass(frozen=True)
class Joined:
    """A request that joins the batch at this step."""

    serial: int
    prompt: tuple[int, ...]
    cfg: GenerationConfig


@dataclass(frozen=True)
class StepMessage:
    """What every rank applies to its decoder before a step."""

    joined: tuple[Joined, ...] = ()
    cancelled: tuple[int, ...] = ()


def send_step(group: ClusterGroup, message: StepMessage) -> None:
    """Broadcast a step message from rank 0 (a step that changes nothing costs one 1-value broadcast)."""
    if not message.joined and not message.cancelled:
        group.broadcast(np.array([0], np.int32), 1)
        return
    joined = [[j.serial, list(j.prompt), asdict(j.cfg)] for j in message.joined]
    body = json.dumps({"joined": joined, "cancelled": list(message.cancelled)}).encode()
    payload = np.frombuffer(body, np.uint8).astype(np.int32)
    group.broadcast(np.array([payload.size], np.int32), 1)
    group.broadcast(payload, int(payload.size))


def receive_step(group: ClusterGroup) -> StepMessage:
    """Wait for rank 0's next step message (ranks > 0)."""
    length = int(group.broadcast(None, 1)[0])
    if length == 0:
        return StepMessage()
    body = json.loads(group.broadcast(None, length).astype(np.uint8).tobytes())
    joined = tuple(Joined(s, tuple(p), GenerationConfig(**c)) for s, p, c in body["joined"])
    return StepMessage(joined, tuple(body["cancelled"]))


class SharedBatchK(BatchK):
    """BatchK that learns rank 0's round times on every rank: every choice made from them (the K, an early
    stop) is then the same on every rank, though each rank's own times differ."""

    def __init__(self, group: ClusterGroup, k_max: int = DEFAULT_POLICY.batch_k_max):
        super().__init__(k_max)
        self.group = group

    def observe(self, rows: int, k: int, seconds: float, *times: float | None) -> None:
        """Add rank 0's round time (and any other times the decoder passes) for this round."""
        mine = [seconds, *times]
        values = np.array([NO_TIME if t is None else round(t * 1e6) for t in mine], np.int32)
        shared = self.group.broadcast(values if self.group.rank == 0 else None, len(mine))
        observe: Callable[..., None] = super().observe  # its later arguments vary with the decoder's version
        observe(rows, k, *[None if v == NO_TIME else float(v) / 1e6 for v in shared])


def shared_decoder(group: ClusterGroup, engine: Engine, max_batch: int) -> BatchDecoder:
    """A BatchDecoder whose BatchK is a SharedBatchK (kept on the engine between batches, as its own is) and
    that steps in lockstep (decoder.lockstep)."""
    if not isinstance(engine.batch_carry.controller, SharedBatchK):
        engine.batch_carry.controller = SharedBatchK(group)
    decoder = BatchDecoder(engine, max_batch)
    if not isinstance(decoder.controller, SharedBatchK):  # the decoder no longer reads it from there
        decoder.controller = SharedBatchK(group)
    decoder.lockstep = True  # what a step reads must not hang on each rank's own clock
    return decoder


@dataclass
class RowTrack:
    """One row on this rank: its agreed cancel, its tokens so far, and (rank 0) its events held until checked."""

    serial: int
    deliver: Callable[[Event], None] | None = None  # rank 0: the row's consumer
    cancel: threading.Event = field(default_factory=threading.Event)
    tokens: list[int] = field(default_factory=list)
    digest: int = 0
    ended: bool = False
    lost: str | None = None  # MLX's message when the row failed on a lost peer
    held: list[Event] = field(default_factory=list)

    def note(self, event: Event) -> None:
        """The decoder's callback for this row."""
        if isinstance(event, TextChunk):
            self.tokens.extend(event.token_ids)
            self.digest = digest(event.token_ids, self.digest)
        self.ended = self.ended or isinstance(event, (Finished, Failed))
        if isinstance(event, Failed) and is_link_error(event.message):
            self.lost = event.message
        if self.deliver is not None:
            self.held.append(event)

    def flush(self) -> None:
        """Hand the checked events on to the consumer."""
        held, self.held = self.held, []
        for event in held:
            assert self.deliver is not None
            self.deliver(event)


class RankBatch:
    """One rank's decoder, stepped as rank 0's step messages say and checked with every rank after each."""

    def __init__(self, group: ClusterGroup, engine: Engine, max_batch: int):
        self.group = group
        self.decoder = shared_decoder(group, engine, max_batch)
        self.rows: dict[int, RowTrack] = {}

    def apply(self, message: StepMessage, deliver: dict[int, Callable[[Event], None]] | None = None) -> None:
        """Add the joining requests (rank 0 passes each one's consumer by serial) and cancel the named rows."""
        for joined in message.joined:
            row = RowTrack(joined.serial, (deliver or {}).get(joined.serial))
            self.rows[joined.serial] = row
            self.decoder.add(BatchRequest(list(joined.prompt), joined.cfg, row.cancel, row.note))
        for serial in message.cancelled:
            if serial in self.rows:
                self.rows[serial].cancel.set()

    def step(self) -> list[RowTrack]:
        """One decoder step checked with every rank; the rows that ended in it. LinkLost when a peer went away
        inside the step, ClusterError when a rank's rows differ from rank 0's."""
        self.decoder.step()
        lost = next((row.lost for row in self.rows.values() if row.lost), None)
        if lost is not None:  # the decoder failed every row on a collective: no check can reach the peer
            raise LinkLost(lost)
        self._sync()
        ended = [row for row in self.rows.values() if row.ended]
        for row in self.rows.values():
            row.flush()
        for row in ended:
            del self.rows[row.serial]
        return ended

    @property
    def over(self) -> bool:
        """True once every request that joined has ended."""
        return self.decoder.active == 0

    def _sync(self) -> None:
        rows = sorted(self.rows.values(), key=lambda r: r.serial)
        summary = digest([v for r in rows for v in (r.serial, len(r.tokens), r.digest)])
        gathered = self.group.gather_ints([self.decoder.active, len(rows), summary])
        for rank, seen in enumerate(gathered[1:], start=1):
            if seen != gathered[0]:
                raise ClusterError(
                    f"{self.group.where(rank)} decoded a batch differently from rank 0 (its rows or their "
                    "tokens differ): the ranks' arithmetic differs; the replies were stopped"
                )
