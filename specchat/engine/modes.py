"""The engine's named values, defined once: speculation modes, why a reply stopped, how a round's drafts fared.

Each is a StrEnum: its members are the strings settings files, the wire and stored rows carry, so a
member equals its string and serializes as it.
"""

from __future__ import annotations

from enum import StrEnum


class _Named(StrEnum):
    """A StrEnum that reads as its string in messages too (f"{mode!r}" gives 'mtp')."""

    def __repr__(self) -> str:
        return repr(self.value)


class SpecMode(_Named):
    """Where a round's drafts come from (BASELINE: none, plain decoding)."""

    BASELINE = "baseline"
    DRAFT = "draft"  # a smaller model of the same family
    MTP = "mtp"  # the target's own multi-token-prediction head
    LOOKUP = "lookup"  # text copied from the prompt and the reply so far
    DFLASH = "dflash"  # a DFlash block drafter reading the target's own layers (one pass per block)
    AUTO = "auto"  # the drafter picked each round: prompt lookup or the model drafter (auto_drafter.py)


MODES: tuple[SpecMode, ...] = tuple(SpecMode)
SPECULATIVE_MODES: tuple[SpecMode, ...] = (
    SpecMode.DRAFT,
    SpecMode.MTP,
    SpecMode.LOOKUP,
    SpecMode.DFLASH,
    SpecMode.AUTO,
)


class StopReason(_Named):
    """Why a reply ended."""

    EOS = "eos"  # the model (or its grammar) ended it
    LENGTH = "length"  # max_tokens, or the context, was reached
    CANCELLED = "cancelled"  # the user or client stopped it


class DraftOutcome(_Named):
    """How the drafts before a draft token fared: what its acceptance is conditioned on (draft_stop.py)."""

    FULL = "full"  # every draft of the last round was accepted
    MISS = "miss"  # the last round's drafts were refused somewhere
    MATCH = "match"  # the drafts before it in this round were accepted so far
