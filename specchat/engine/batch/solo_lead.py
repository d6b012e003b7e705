"""A request alone runs on the engine's own loop; when a second one comes it moves into the batch.

A single stream is fastest on the solo loop (its Auto K stops drafts where the drafter is unsure,
its plain steps are pipelined). So the first request of an empty batch is the lead: its events come
from Engine.stream. Once another request waits, the lead's generator is closed between two events
(every open round is rolled back as it closes), and the lead becomes a newcomer whose prompt is
everything so far, read from the engine's own caches: only what they do not hold yet is prefilled.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..engine import Engine
from ..events import Event, Failed, Finished, PrefillProgress, RoundResult, TextChunk
from ..model_types import Cache
from ..modes import SpecMode
from ..runner import ModelRunner
from ..stats import StatsRecorder
from .requests import BatchRequest

if TYPE_CHECKING:
    from .solo_tail import TailRelay


@dataclass
class Handover:
    """What the batch needs to go on with a lead: its sequence so far, what it emitted, and the caches the
    engine's runners held for it (moved out of them)."""

    seq: list[int]
    emitted: list[int]
    target: tuple[int, list[Cache] | None]
    draft: tuple[int, list[Cache] | None]
    stats: StatsRecorder


@dataclass
class SoloLead:
    """The first request of an empty batch, decoding on the engine's own loop."""

    engine: Engine
    request: BatchRequest
    events: Iterator[Event] = field(init=False)
    emitted: list[int] = field(default_factory=list)
    rounds: list[RoundResult] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    prefill_end: float | None = None
    first_token: float | None = None
    ended: bool = False
    relay: TailRelay | None = None  # when the lead goes on with a batch row (solo_tail.py)

    @property
    def origin(self) -> BatchRequest:
        """The request the batch knows: this one, or the row a tail goes on with."""
        return self.request if self.relay is None else self.relay.row.request

    def __post_init__(self) -> None:
        self.events = self.engine.stream(list(self.request.prompt), self.request.cfg, self.request.cancel)

    def step(self) -> None:
        """Relay the lead's events up to the end of its next round (or step, or prefill chunk)."""
        for event in self.events:
            self._note(event)
            self.request.emit(event)
            if isinstance(event, (Finished, Failed)):
                self.ended = True
                return
            if isinstance(event, (RoundResult, PrefillProgress)) or (isinstance(event, TextChunk) and not self.rounds):
                return
        self.ended = True

    def _note(self, event: Event) -> None:
        now = time.perf_counter()
        if not isinstance(event, PrefillProgress) and self.prefill_end is None:
            self.prefill_end = now
        if isinstance(event, TextChunk):
            self.emitted.extend(event.token_ids)
            if event.token_ids and self.first_token is None:
                self.first_token = now
        elif isinstance(event, RoundResult):
            self.rounds.append(event)

    def hand_over(self) -> Handover:
        """Stop the solo loop between two events and give the batch all it needs to go on."""
        close = getattr(self.events, "close", None)
        if close is not None:
            close()  # rolls back any open round: the runners hold a prefix of the sequence
        seq = list(self.request.prompt) + self.emitted
        target = _moved(self.engine.runner, seq)
        runner = self.engine.draft_runner
        draft = _moved(runner, seq) if runner is not None and self.request.cfg.mode == SpecMode.DRAFT else (0, None)
        stats = StatsRecorder(self.request.cfg, len(self.request.prompt), 0)
        stats.start, stats.first_token = self.started, self.first_token
        stats.prefill_end = self.prefill_end or time.perf_counter()
        for result in self.rounds:
            stats.round_done(result)
        handed = Handover(seq, list(self.emitted), target, draft, stats)
        return handed if self.relay is None else self.relay.handover(handed)


def _moved(runner: ModelRunner, seq: list[int]) -> tuple[int, list[Cache] | None]:
    """The runner's caches and how many tokens they hold, when those begin seq and leave its last token out
    (a runner the lead had not reached yet still holds an earlier conversation); its caches start afresh."""
    held, caches = runner.hand_over()
    if not held or len(held) >= len(seq) or held != seq[: len(held)]:
        return 0, None
    return len(held), caches
