"""A request of the batch, and the two ways it is held: waiting to join (its prompt being read) and running."""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import mlx.core as mx

from ..config import GenerationConfig
from ..constraint import GrammarState
from ..engine import end_events
from ..events import Event
from ..model_types import Cache
from ..modes import StopReason
from ..stats import StatsRecorder
from ..tokenizer import Detokenizer
from .batch_drafts import RowState
from .batch_k import RowAcceptance

if TYPE_CHECKING:
    from ..dflash import DFlashDrafter

Start = tuple[int, list[Cache] | None]  # caches that already hold the first n tokens (None: start empty)


class Prefilled(NamedTuple):
    """What a newcomer's prefill leaves: the target's caches, the draft model's (draft rows), the target's final
    hidden state at the last token read (MTP rows; None when nothing was left to read), the row's DFlash
    drafter with the prompt in its context cache (DFlash rows)."""

    target: list[Cache]
    draft: list[Cache] | None
    hidden: mx.array | None
    dflash: DFlashDrafter | None = None


@dataclass
class BatchRequest:
    """One generation for the batch: its prompt, config, cancel event and where its events go."""

    prompt: list[int]
    cfg: GenerationConfig
    cancel: threading.Event
    emit: Callable[[Event], None]  # called on the engine thread


@dataclass
class Row:
    """A running request: its round state, its events' detokenizer and stats, and its batch sizes."""

    request: BatchRequest
    state: RowState
    stats: StatsRecorder
    detok: Detokenizer
    auto: bool
    tokens: list[int] = field(default_factory=list)
    acceptance: RowAcceptance = field(default_factory=RowAcceptance)
    rows_seen: list[int] = field(default_factory=list)  # batch size at each of its rounds

    def end_events(self, decode: Callable[[list[int]], str], stop: StopReason) -> Iterator[Event]:
        """The row's last text and its Finished, with the batch sizes it ran at."""
        seen = self.rows_seen or [1]
        rows = (max(seen), sum(seen) / len(seen))
        yield from end_events(self.detok, decode, self.tokens, self.stats, stop, batch_rows=rows)


@dataclass
class Newcomer:
    """A request whose prompt is being read, a chunk per step, before it joins the rounds."""

    request: BatchRequest
    budget: int
    stats: StatsRecorder
    prefill: Generator[Event, None, Prefilled]
    emitted: list[int] = field(default_factory=list)  # a lead's tokens from before it joined
    grammar: GrammarState | None = None  # structured output: the grammar where the row's reply stands
    unread: int = 0  # prompt tokens the target had left to read when it came: the shortest is read first
    draft_unread: int = 0  # of a draft-model row: prompt tokens its draft model had left to read when it came
