"""The last row of a batch goes back to the engine's own loop for the rest of its reply.

A single stream is fastest there (SoloLead's docstring). When every other row has left and nobody
waits, the row's caches move into the engine's runners and Engine.stream goes on from its sequence so
far, with what is left of its budget. Its events are the row's: text from the row's detokenizer (a
character split across the move is whole), rounds into the row's stats, one Finished for the whole
reply. When another request comes, the tail hands over like a lead and rejoins the batch.
Structured rows (their grammar state lives in the batch) and MTP rows stay in the batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..engine import Engine, step_events
from ..events import Event, Failed, Finished, RoundResult, TextChunk
from ..model_types import Cache
from ..modes import SpecMode, StopReason
from ..round import Step
from .batch_model import BatchModel
from .prefix_store import extract_row
from .requests import BatchRequest, Row
from .solo_lead import Handover, SoloLead


def can_go_solo(row: Row) -> bool:
    """Whether the row can go on on the engine's own loop."""
    return row.state.ctx.grammar is None and row.state.mode in (SpecMode.BASELINE, SpecMode.DRAFT, SpecMode.LOOKUP)


def solo_tail(
    engine: Engine, row: Row, target: tuple[int, list[Cache]], draft: tuple[int, list[Cache]] | None
) -> SoloLead:
    """A lead that continues `row` on the engine's loop from these caches (held tokens, one-row caches)."""
    seq = row.state.ctx.seq
    engine.runner.take_over(target[1], seq[: target[0]])
    if engine.draft_runner is not None and draft is not None:
        engine.draft_runner.take_over(draft[1], seq[: draft[0]])
    left = row.state.ctx.budget - row.state.generated
    # a draft-mode row the draft model never read (newcomer_prefill.py) goes on plainly there too
    cfg = replace(row.request.cfg, max_tokens=max(left, 1), mode=SpecMode(row.state.mode))
    relay = TailRelay(engine, row)
    request = BatchRequest(list(row.state.ctx.seq), cfg, row.request.cancel, relay)
    return SoloLead(engine, request, relay=relay)


def row_caches(model: BatchModel, index: int) -> tuple[int, list[Cache]]:
    """A batch model's row as (tokens held, one-row caches)."""
    return model.held[index], extract_row(model.caches, index)


class TailRelay:
    """Turns the continued stream's events into the row's: its text, its stats, its one Finished."""

    def __init__(self, engine: Engine, row: Row):
        self.engine, self.row = engine, row
        self.emit: Callable[[Event], None] = row.request.emit

    def __call__(self, event: Event) -> None:
        row = self.row
        if isinstance(event, TextChunk):
            row.state.generated += len(event.token_ids)
            step = Step(list(event.token_ids), list(event.from_draft), logprobs=list(event.logprobs) or None)
            for chunk in step_events(step, row.detok, row.tokens, row.stats):  # the row's own text
                self.emit(chunk)
        elif isinstance(event, RoundResult):
            row.stats.round_done(event)
            row.rows_seen.append(1)
            self.emit(event)
        elif isinstance(event, Finished):
            for end in row.end_events(self.engine.tokenizer.decode, StopReason(event.stats.stop_reason)):
                self.emit(end)
        elif isinstance(event, Failed):
            self.emit(replace(event, partial_tokens=tuple(row.tokens)))

    def handover(self, handed: Handover) -> Handover:
        """What the batch needs to take the row back: the whole reply so far and the row's own stats."""
        return replace(handed, emitted=list(handed.seq[len(self.row.request.prompt) :]), stats=self.row.stats)
