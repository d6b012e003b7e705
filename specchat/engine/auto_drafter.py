"""Auto: the drafter picked each round. Prompt lookup costs no model pass, so it drafts where the conversation
has a match it expects to pay at least as well as the model drafter; the model drafter (the draft model, or
else the target's MTP head) drafts everywhere else. What each source's drafts were worth on this pair is
learned from the rounds themselves (drafts checked and accepted, decayed) and kept across replies.

It is a drafter like the others (drafters.Drafter): the loop verifies, accepts and rolls back as ever, so
the output is exactly the target's whichever source drafted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import mlx.core as mx

from .drafters import Draft, Drafter, DraftRequest
from .lookup import PromptLookupDrafter, match_continuation
from .runner import common_prefix_len, token_ids

LOOKUP = "lookup"
MIN_MATCH = 2  # a lookup match shorter than this is a guess, not a copy
DRAFT_STEP_SHARE = 0.3  # a model draft step's cost as a share of a verify pass, until the loop measures it
DECAY = 0.95  # each round's weight against what came before (a reply's character changes as it goes)


@dataclass
class SourceRecord:
    """What one source's drafts were worth: drafts the target checked, and how many it accepted (decayed)."""

    accepted: float
    checked: float

    @property
    def rate(self) -> float:
        """The chance one of its drafts is accepted, given the ones before it were."""
        return self.accepted / self.checked if self.checked else 0.0

    def add(self, accepted: int, checked: int) -> None:
        """One round's drafts."""
        self.accepted = self.accepted * DECAY + accepted
        self.checked = self.checked * DECAY + checked


def expected_tokens(rate: float, drafts: int) -> float:
    """Tokens a round emits on average: its accepted drafts plus the target's own token."""
    return 1 + sum(rate**i for i in range(1, drafts + 1))


class AutoDrafter:
    """Drafts each round with prompt lookup or the model drafter, whichever is expected to give more tokens
    per unit of time on this pair."""

    name = "auto"

    def __init__(self, model: Drafter | None, lookup: PromptLookupDrafter):
        self.model, self.lookup = model, lookup
        self.records = {LOOKUP: SourceRecord(0.6, 1.0)}  # a match is usually copied on (priors: one round each)
        if model is not None:
            self.records[model.name] = SourceRecord(0.5, 1.0)
        self.pending: tuple[str, mx.array, int] | None = None  # the last proposal: source, drafts, where

    @property
    def wired(self) -> Drafter | None:
        """The model drafter, whose hooks the engine wires (the MTP head's hidden states)."""
        return self.model

    def prefill_steps(self, seq: list[int]) -> Iterator[tuple[int, int]]:
        """The model drafter reads the prompt (lookup has nothing to read)."""
        if self.model is not None:
            yield from self.model.prefill_steps(seq)

    def unseen(self, seq: list[int]) -> int:
        """What the model drafter has not read (after rounds lookup drafted, it catches up)."""
        return self.model.unseen(seq) if self.model is not None else 0

    def propose(self, request: DraftRequest) -> Draft:
        """The chosen source's drafts, marked with its name."""
        source = self.choose(request)
        drafter = self.lookup if source == LOOKUP or self.model is None else self.model
        draft = replace(drafter.propose(request), source=source)
        self.pending = (source, draft.tokens, len(request.seq))
        return draft

    def choose(self, request: DraftRequest) -> str:
        """The source with more expected tokens per verify-pass time: lookup where it has a match, else the
        model drafter, whose draft steps cost DRAFT_STEP_SHARE of a verify pass each."""
        if self.model is None:
            return LOOKUP
        match, _ = match_continuation(request.seq, request.k, self.lookup.ngram_max)
        if len(match) < MIN_MATCH:
            return self.model.name
        copied = expected_tokens(self.records[LOOKUP].rate, len(match))
        modelled = expected_tokens(self.records[self.model.name].rate, request.k) / (1 + DRAFT_STEP_SHARE * request.k)
        return LOOKUP if copied >= modelled else self.model.name

    def observe(self, seq: list[int]) -> None:
        """Learn what the last proposal was worth, then let both sources roll back to seq."""
        if self.pending is not None:
            source, tokens, start = self.pending
            drafts = token_ids(tokens)
            accepted = common_prefix_len(drafts, seq[start:])
            self.records[source].add(accepted, min(len(drafts), accepted + 1))
            self.pending = None
        if self.model is not None:
            self.model.observe(seq)
        self.lookup.observe(seq)

    def reset(self) -> None:
        """Forget both sources' state (what their drafts were worth is kept: it is the pair's)."""
        self.pending = None
        if self.model is not None:
            self.model.reset()
        self.lookup.reset()
