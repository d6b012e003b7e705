"""Joinable jobs: generations that share one batched decode loop on the host's thread.

A joinable job is a generation job that also carries a `JoinSpec` (its prompt ids, config and the
observers of its engine events). When the host pops one and the batch decoder accepts its engine and
config, the host runs a batch instead of the job's work: a `BatchDecoder` with that request, stepped
until every row ended. Between steps the batch takes more joinable jobs, from the front of the queue
only, while the front one is joinable, batchable and there is room; any other job at the front (a load,
a sweep) stops the joining, so it runs as soon as the rows end. Each row is its own job to its
consumer: JobStarted when it joins, its engine events as JobProgress, its own terminal event when it
ends. A refused joinable job (MTP with the head's history, max_batch 1) runs its work solo. A JoinSpec may
name its own decoder API (a cluster's, which steps every rank's decoder at once); only jobs naming the same
one join a batch.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from ..config import GenerationConfig
from ..errors import error_kind, user_message
from ..events import Event, Failed, Finished, TextChunk
from .events import JobCancelled, JobEnd, JobFinished, JobProgress, JobStarted

if TYPE_CHECKING:
    from .handle import JobHandle
    from .host import EngineHost
    from .hosted import HostedEngine

log = logging.getLogger(__name__)

Observer = Callable[[int, Event], None]  # (job id, engine event), on the engine thread


@dataclass(frozen=True)
class JoinSpec:
    """What lets a generation job join a batch: its prompt, its config, who else sees its engine events,
    and the most rows the batch it starts may hold (1: never batched)."""

    prompt: tuple[int, ...]
    cfg: GenerationConfig
    observers: tuple[Observer, ...] = ()
    max_batch: int = 8
    decoder: DecoderApi | None = None  # the batch decoder to use (a cluster's lockstep one); None: load_decoder()


class Decoder(Protocol):
    """A batch decoder as the host steps it (specchat.engine.batch.decoder.BatchDecoder)."""

    @property
    def active(self) -> int: ...

    @property
    def room(self) -> int: ...

    def add(self, request: object) -> None: ...  # the request its own module's BatchRequest made

    def step(self) -> None: ...


class DecoderApi(Protocol):
    """The batch decoder module's contract (specchat.engine.batch.decoder, or a test's stand-in)."""

    def BatchDecoder(self, engine: HostedEngine, max_batch: int) -> Decoder: ...  # a class, called

    def BatchRequest(  # a class, called
        self, prompt: list[int], cfg: GenerationConfig, cancel: threading.Event, emit: Callable[[Event], None]
    ) -> object: ...

    def batch_refusal(self, engine: HostedEngine, cfg: GenerationConfig) -> str | None: ...


def load_decoder() -> DecoderApi | ModuleType:
    """The batch decoder module (imported when first asked; tests replace this function)."""
    from ..batch import decoder

    return decoder


def refusal(engine: HostedEngine | None, spec: JoinSpec, api: DecoderApi | ModuleType) -> str | None:
    """Why this job cannot decode in a batch now (None when it can)."""
    if spec.max_batch <= 1:
        return "batching is off (max_batch 1)"
    if engine is None:
        return "no model is loaded"
    reason: str | None = api.batch_refusal(engine, spec.cfg)
    return reason


def batch_api(host: EngineHost, handle: JobHandle[object]) -> DecoderApi | ModuleType | None:
    """The decoder to run this popped job in a batch with, None when it runs solo."""
    if handle.join is None or handle.cancel.is_set():
        return None
    try:
        api = handle.join.decoder if handle.join.decoder is not None else load_decoder()
        reason = refusal(host.engine, handle.join, api)
    except Exception:  # a decoder that cannot even say: the job runs alone, the thread lives on
        log.exception("job %s runs alone: the batch decoder could not be asked", handle.id)
        return None
    if reason is not None:
        log.debug("job %s runs alone: %s", handle.id, reason)
        return None
    return api


class _Row:
    """One joined job: relays its engine events and notes whether it ended."""

    def __init__(self, handle: JobHandle[object], spec: JoinSpec):
        self.handle, self.spec = handle, spec
        self.tokens: list[int] = []
        self.ended = False

    def emit(self, event: Event) -> None:
        """The decoder's callback for this row (engine thread); never raises into the decoder."""
        if self.ended:
            log.warning("job %s: an event after its end was dropped: %r", self.handle.id, type(event).__name__)
            return
        if isinstance(event, TextChunk):
            self.tokens.extend(event.token_ids)
        self.ended = isinstance(event, (Finished, Failed))
        self.handle.deliver(JobProgress(self.handle.info, event))
        for observe in self.spec.observers:
            try:
                observe(self.handle.id, event)
            except Exception:  # an observer's bug must not fail the other rows
                log.exception("job %s: an observer raised", self.handle.id)


def run_batch(host: EngineHost, first: JobHandle[object], api: DecoderApi | ModuleType) -> None:
    """Decode `first` and the joinable jobs that join it in one batch until every row ended (engine thread).

    The host already moved `first` to its running rows; every row leaves them through host.end_row."""
    engine = host.engine
    assert engine is not None and first.join is not None  # batch_api refuses without an engine or a join
    first_spec = first.join
    rows: list[_Row] = []

    def batchable(handle: JobHandle[object]) -> bool:
        try:
            spec = handle.join
            return spec is not None and spec.decoder is first_spec.decoder and refusal(engine, spec, api) is None
        except Exception:  # it waits for the batch to end and runs alone (batch_api logs why)
            return False

    def join(handle: JobHandle[object], decoder: Decoder) -> None:
        assert handle.join is not None
        host.publish(handle, JobStarted(handle.info))
        row = _Row(handle, handle.join)
        rows.append(row)
        spec = handle.join
        decoder.add(api.BatchRequest(prompt=list(spec.prompt), cfg=spec.cfg, cancel=handle.cancel, emit=row.emit))

    def end(row: _Row, event: JobEnd) -> None:
        rows.remove(row)
        host.end_row(row.handle, event)

    try:
        decoder = api.BatchDecoder(engine, first.join.max_batch)
        join(first, decoder)
        while rows:
            while decoder.room > 0 and (joiner := host.take_joiner(batchable)) is not None:
                if joiner.cancel.is_set():  # cancelled as it was taken: it never runs
                    host.end_row(joiner, JobCancelled(joiner.info))
                else:
                    join(joiner, decoder)
            decoder.step()
            for row in [r for r in rows if r.ended]:
                end(row, JobFinished(row.handle.info, None))
            if rows and decoder.active == 0:
                raise RuntimeError("the batch decoder dropped requests without ending them")
    except Exception as exc:  # the whole batch failed: every row still running gets its Failed
        log.exception("a batch of %d rows failed", len(rows))
        message, kind = user_message(exc), error_kind(exc)
        for row in list(rows):
            if not row.ended:
                row.emit(Failed(message, kind, tuple(row.tokens)))
            end(row, JobFinished(row.handle.info, None))
