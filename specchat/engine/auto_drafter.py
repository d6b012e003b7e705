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
from typing import TYPE_CHECKING

import mlx.core as mx

from .autok import expected_tokens
from .drafters import NO_TAPS, Draft, Drafter, DraftRequest, TargetTaps
from .lookup import PromptLookupDrafter, match_continuation
from .modes import SpecMode
from .policy import DEFAULT_POLICY, SpeculationPolicy
from .runner import common_prefix_len, token_ids

if TYPE_CHECKING:
    from .config import GenerationConfig

LOOKUP = SpecMode.LOOKUP  # the name Auto marks prompt lookup's rounds with


@dataclass
class SourceRecord:
    """What one source's drafts were worth: drafts the target checked, and how many it accepted (decayed)."""

    accepted: float
    checked: float
    decay: float = DEFAULT_POLICY.source_decay  # each round's weight against what came before

    @property
    def rate(self) -> float:
        """The chance one of its drafts is accepted, given the ones before it were."""
        return self.accepted / self.checked if self.checked else 0.0

    def add(self, accepted: int, checked: int) -> None:
        """One round's drafts."""
        self.accepted = self.accepted * self.decay + accepted
        self.checked = self.checked * self.decay + checked


class AutoDrafter(Drafter):
    """Drafts each round with prompt lookup or the model drafter, whichever is expected to give more tokens
    per unit of time on this pair."""

    name = "auto"

    def __init__(self, model: Drafter | None, lookup: PromptLookupDrafter, policy: SpeculationPolicy = DEFAULT_POLICY):
        self.model, self.lookup, self.policy = model, lookup, policy
        decay = policy.source_decay
        self.records: dict[str, SourceRecord] = {
            LOOKUP: SourceRecord(0.6, 1.0, decay)
        }  # a match is usually copied on (priors: one round each)
        if model is not None:
            self.records[model.name] = SourceRecord(0.5, 1.0, decay)
        self.pending: tuple[str, mx.array, int] | None = None  # the last proposal: source, drafts, where

    def begin(self, cfg: GenerationConfig) -> TargetTaps:
        """A generation begins: the model drafter's taps (the MTP head's hidden states, DFlash's layers)."""
        return self.model.begin(cfg) if self.model is not None else NO_TAPS

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
        model drafter, whose drafting costs its draft passes (one per token, or one for a block drafter)."""
        if self.model is None or request.costless:
            return LOOKUP
        match, _ = match_continuation(request.seq, request.k, self.lookup.ngram_max)
        if len(match) < self.policy.lookup_min_match:
            return self.model.name
        copied = expected_tokens(self.records[LOOKUP].rate, len(match))
        passes = min(request.k, 1) if self.model.one_pass_draft else request.k
        modelled = expected_tokens(self.records[self.model.name].rate, request.k) / (
            1 + self.draft_share(request) * passes
        )
        return LOOKUP if copied >= modelled else self.model.name

    def costless(self, seq: list[int], k: int) -> tuple[int, float]:
        """Lookup's match here, if long enough to trust, and the rate its copies have been accepted at."""
        match, _ = match_continuation(seq, k, self.lookup.ngram_max)
        if len(match) < self.policy.lookup_min_match:
            return 0, 0.0
        return len(match), self.records[LOOKUP].rate

    def draft_share(self, request: DraftRequest) -> float:
        """A model draft pass's cost as a share of a verify pass: Auto K's measurement on this pair when the round
        has one, else the policy's prior."""
        measured = request.plan.draft_share if request.plan is not None else None
        return measured if measured is not None else self.policy.prior_draft_share

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
