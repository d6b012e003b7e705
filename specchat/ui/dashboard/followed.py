"""Which generation the dashboard follows (one at a time, keyed by job id) and the figures of its rounds.

A chat reply and API requests may decode in one batch, their events interleaved. Every figure on the
dashboard comes from one generation: this chat's reply, or, while no chat reply runs, one API request
followed from its first event to its end. Tiles and charts read the same rounds, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from specchat.system.ringbuffer import RoundSeries

CHAT, API = "chat", "api"
Key = tuple[str, int | None]  # (source, job id); a chat reply fed without its id is ("chat", None)


class Step(Enum):
    """What an event means to the dashboard."""

    START = "start"  # the first event of the generation followed from now on
    SAME = "same"  # an event of the followed generation
    SKIP = "skip"  # another generation's: not on screen


class Follower:
    """Picks the one generation the figures come from. A chat reply takes over from an API request (the
    request is then passed over to its end); an API request is followed only from its first event, while
    nothing else runs: one first seen halfway would plot only its later rounds."""

    def __init__(self) -> None:
        self.key: Key | None = None  # the followed generation while it runs
        self._passed: set[Key] = set()  # generations running unfollowed, forgotten at their end

    def take(self, source: str, job_id: int | None, terminal: bool) -> Step:
        """Where one event (terminal: Finished or Failed) of (source, job_id) goes."""
        key = (source, job_id)
        if key == self.key:
            if terminal:
                self.key = None
            return Step.SAME
        if key in self._passed:
            if terminal:
                self._passed.discard(key)
            return Step.SKIP
        if self.key is None or source == CHAT:  # nothing followed, or this chat's reply, which comes first
            if self.key is not None:
                self._passed.add(self.key)
            self.key = None if terminal else key
            return Step.START
        if not terminal:
            self._passed.add(key)
        return Step.SKIP

    def clear(self) -> None:
        """Follow nothing; the next generation's first event starts afresh."""
        self.key = None
        self._passed.clear()


@dataclass(frozen=True)
class RoundFigures:
    """The counts of one generation's rounds, the one source of the tiles and the charts' captions."""

    rounds: int
    drafting: int  # rounds that drafted (K >= 1); the others are Auto K's plain bursts
    drafted: int
    accepted: int

    @classmethod
    def of(cls, rounds: RoundSeries, drafting: int) -> RoundFigures:
        """From the followed generation's round series and its count of drafting rounds."""
        totals = rounds.totals()
        return cls(int(totals["rounds"]), drafting, int(totals["drafted"]), int(totals["accepted"]))

    @property
    def plain(self) -> int:
        """Rounds that drafted nothing: a part of the same rounds, so never negative."""
        return self.rounds - self.drafting

    @property
    def acceptance(self) -> float | None:
        """Accepted over drafted tokens (None: nothing drafted)."""
        return self.accepted / self.drafted if self.drafted else None

    @property
    def per_round(self) -> float | None:
        """Accepted drafts per drafting round, as GenerationStats.mean_accepted_per_round counts it."""
        return self.accepted / self.drafting if self.drafting else None
