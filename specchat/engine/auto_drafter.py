"""Auto: the drafter picked each round. Prompt lookup costs no model pass, so it drafts where the conversation
has a match it expects to pay at least as well as the model drafter; the model drafter (the draft model, or
else the target's MTP head) drafts everywhere else. What each source's drafts were worth on this pair is
learned from the rounds themselves (drafts checked and accepted, decayed) and kept across replies.

Lookup's copies are worth very different amounts by how long a tail matched (a four-token tail in a code edit is
copied on; a one-token tail in new code is a guess), and a copy in prose is often refused at its first token
but, once taken, copied on. So a copy's first token is learned per tail length (starting from lookup's pooled
first tokens scaled by the tail's share of the longest, where a length has little evidence), its later tokens by
position (short tails' copies apart from longer ones'), and each round's source and depth are priced in this
pair's measured seconds (pass_costs.py). Where a copy's first token is in doubt (prose that paraphrases its source
copies a phrase but not how it joins the next) and a draft step is cheap, the model drafter drafts one token and the
copy is appended only where that token is the copy's first (a led copy, copy_on.py). A source never picked would
never be learned, and lookup costs nothing to ask: in a round the model drafter drafts, lookup's match is checked
against what the target then emitted (the first token that differs is where the target would have refused it) and
counts too. The other way round costs nothing either: a draft model catching up on the reply lookup's rounds and plain
bursts wrote reads it in one pass, and under greedy decoding its top token at each position says whether its draft
there would have been taken; those count in its record (drafted only where lookup fails, it would learn only the
reply's hardest places).

It is a drafter like the others (drafters.Drafter): the loop verifies, accepts and rolls back as ever, so
the output is exactly the target's whichever source drafted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING, NamedTuple

import mlx.core as mx

from .copy_on import copied_on, copy_reach, led_copy, led_draft
from .drafters import NO_TAPS, CatchUp, Draft, Drafter, DraftRequest, TargetTaps
from .lookup import PromptLookupDrafter, longest_match
from .modes import SpecMode
from .pass_costs import Acceptance, PassCosts
from .policy import DEFAULT_POLICY, SpeculationPolicy
from .runner import common_prefix_len, token_ids

if TYPE_CHECKING:
    from .config import GenerationConfig

LOOKUP = SpecMode.LOOKUP  # the name Auto marks prompt lookup's rounds with


def position_name(position: int, short: bool = False) -> str:
    """The record of copied tokens at this position (2 on; 1 is the first token's, by tail), each given the ones
    before it held: positions 2, 3 and 4 apart, then 5-8 and 9 on; `short`: copies after a short tail's."""
    start = position if position <= 4 else 5 if position <= 8 else 9
    return f"{LOOKUP}+{start}" + (":short" if short else "")


@cache
def position_names(short: bool = False) -> tuple[str, ...]:
    """Every position record's name, in the order of the positions (2 to 9: the last holds on)."""
    return tuple(dict.fromkeys(position_name(n, short) for n in range(2, 10)))


def tail_name(tail: int) -> str:
    """The record of lookup's copies after a matched tail of this many tokens."""
    return f"{LOOKUP}@{tail}"


@dataclass(frozen=True)
class Shadow:
    """Lookup's match in a round it did not draft: its tokens, where they start, the tail that matched."""

    tokens: list[int]
    start: int
    tail: int


class Pending(NamedTuple):
    """The last proposal, until the round shows what was kept: its source, tokens, where they start, lookup's tail
    (a lookup round's), and for a model draft copied on, how many tokens were copied and after what tail."""

    source: str
    tokens: mx.array
    start: int
    tail: int
    copied: int = 0
    copy_tail: int = 0
    led: bool = False  # a copy led by the model's token: the whole draft is lookup's copy, its first token the model's
    read: CatchUp | None = None  # how the model drafter's top tokens agreed with the reply it caught up on


class Pick(NamedTuple):
    """Auto's choice for a round: the source that drafts, at most how many tokens, and a led copy's depth (the model
    drafter's one token and lookup's copy behind it; 0: none)."""

    source: str
    k: int
    lead: int = 0


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

    def weigh_at_most(self, evidence: float) -> None:
        """Keep the rate, weighing no more than this many drafts."""
        if self.checked > evidence:
            self.accepted, self.checked = self.accepted * evidence / self.checked, evidence


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
        self.records.update({tail_name(n): SourceRecord(0.0, 0.0, decay) for n in range(1, lookup.ngram_max + 1)})
        for name in (*position_names(), *position_names(short=True)):
            self.records[name] = SourceRecord(0.8, 1.0, decay)  # a copy under way is usually copied on
        if model is not None:
            self.records[model.name] = SourceRecord(0.5, 1.0, decay)
        self.pending: Pending | None = None
        self.shadow: Shadow | None = None  # lookup's match in a round another source drafts, checked afterwards

    def begin(self, cfg: GenerationConfig) -> TargetTaps:
        """A generation begins: what each source was worth is kept but weighs only policy.reply_evidence drafts (code
        before, prose now?); the model drafter's taps (the MTP head's hidden states, DFlash's layers)."""
        for record in self.records.values():
            record.weigh_at_most(self.policy.reply_evidence)
        return self.model.begin(cfg) if self.model is not None else NO_TAPS

    def prefill_steps(self, seq: list[int]) -> Iterator[tuple[int, int]]:
        """The model drafter reads the prompt (lookup has nothing to read)."""
        if self.model is not None:
            yield from self.model.prefill_steps(seq)

    def unseen(self, seq: list[int]) -> int:
        """What the model drafter has not read (after rounds lookup drafted, it catches up)."""
        return self.model.unseen(seq) if self.model is not None else 0

    def propose(self, request: DraftRequest) -> Draft:
        """The chosen source's drafts, marked with its name (lookup's as costless: the model drafter sat out)."""
        self._settle_shadow(request.seq, force=True)
        match, _, tail = longest_match(request.seq, copy_reach(request), self.lookup.ngram_max)
        pick = self.choose(request, match, tail)
        if pick.source == LOOKUP:
            draft = replace(self.lookup.propose(self._lookup_request(request, pick.k)), costless=self.model is not None)
            copy_tail = 0
        elif pick.lead:
            assert self.model is not None
            draft, copy_tail = led_draft(self.model, request, match[: pick.lead]), 0
        else:
            assert self.model is not None
            draft, copy_tail = copied_on(self, request, self.model.propose(request))
        draft = replace(draft, source=pick.source)
        led = bool(pick.lead and draft.copied)
        self.pending = Pending(
            pick.source, draft.tokens, len(request.seq), tail, draft.copied, copy_tail, led, draft.read
        )
        # a model draft copied on teaches lookup through its copy: the match before it would count the phrase twice
        if pick.source != LOOKUP and not draft.copied and len(match) >= self.policy.lookup_min_match:
            self.shadow = Shadow(match, len(request.seq), tail)
        return draft

    def choose(self, request: DraftRequest, match: list[int] | None = None, tail: int = 0) -> Pick:
        """The source, and how many it drafts, with the most expected tokens per second: lookup's copy (verify
        passes only) where it has a match that beats the model drafter (its draft passes too) and a plain token;
        a copy led by one model token where that beats both (a copy in doubt checked for a draft step); else the
        model drafter, from each one's acceptance and this pair's measured passes. `match` and `tail`: lookup's
        match here (None: found now)."""
        if self.model is None or request.costless:
            return Pick(LOOKUP, request.k)
        if match is None:
            match, _, tail = longest_match(request.seq, copy_reach(request), self.lookup.ngram_max)
        if len(match) < self.policy.lookup_min_match:
            return Pick(self.model.name, request.k)
        costs, odds, model_rate = self.pass_costs(request), self.lookup_odds(tail), self.records[self.model.name].rate
        depth, copied = costs.best(odds, len(match), drafted=False)
        _, modelled = costs.best(Acceptance.iid(model_rate), request.k, drafted=True)
        beats_plain = copied * costs.verify[0] > 1  # else Auto K's call stands (it may be probing the model drafter)
        lead, led = led_copy(costs, odds, model_rate, len(match)) if self._may_lead(request) else (0, 0.0)
        if beats_plain and copied >= max(modelled, led):
            return Pick(LOOKUP, depth)
        return Pick(self.model.name, 1, lead) if led > modelled else Pick(self.model.name, request.k)

    @staticmethod
    def _may_lead(request: DraftRequest) -> bool:
        """Whether a copy may be led by one model token: the model drafter may draft more than one (else its round
        is one token either way), and no grammar checks its tokens (nothing is appended behind them then)."""
        return request.k > 1 and request.constraint is None

    def pass_costs(self, request: DraftRequest) -> PassCosts:
        """The passes Auto K measured on this pair when the round has them, else the policy's prior (flat verify
        passes, a draft pass policy.prior_draft_share of one)."""
        measured = request.plan.passes if request.plan is not None else None
        if measured is not None:
            return measured
        one_pass = self.model is not None and self.model.one_pass_draft
        return PassCosts.flat(copy_reach(request), self.policy.prior_draft_share, one_pass)

    def _lookup_request(self, request: DraftRequest, depth: int) -> DraftRequest:
        """Lookup's round: as deep as the costs chose, without the model drafter's early stop (its confidences
        are a model's; lookup's depth was chosen from its own acceptance)."""
        if self.model is None or request.costless:
            return request
        return replace(request, k=depth, plan=None)

    def lookup_odds(self, tail: int) -> Acceptance:
        """How a copy after a matched tail of this length is accepted: its first token as that length's record says
        (started from lookup's pooled first tokens scaled by the tail's share of the longest, weighing
        policy.lookup_tail_evidence copies), the rest as every copy's tokens at that position were (started from
        the position before's)."""
        pooled, own = self.records[LOOKUP], self.records.get(tail_name(tail))
        # the pool is mostly long tails' copies (code's run on): a one-token tail new to this pair is a guess
        first = pooled.rate if own is None else self._leaning(own, pooled.rate * tail / self.lookup.ngram_max)
        rates: dict[str, float] = {}
        before: float | None = None
        short = self.short_tail(tail)
        for name in position_names(short):  # a later position with little evidence of its own is like the one before
            record = self.records[name]
            before = rates[name] = record.rate if before is None else self._leaning(record, before)
        return Acceptance(first, tuple(rates[position_name(n, short)] for n in range(2, 10)))

    def short_tail(self, tail: int) -> bool:
        """Whether copies after a tail this long learn their later tokens apart (prose's chance phrases stop where
        code's copies run on: learned together, a prose reply would keep the next code reply's copies shallow)."""
        return tail <= self.policy.lookup_short_tail

    def _leaning(self, record: SourceRecord, broader: float) -> float:
        """A narrow record's rate, started from a broader rate weighing policy.lookup_tail_evidence drafts."""
        evidence = self.policy.lookup_tail_evidence
        return (record.accepted + broader * evidence) / (record.checked + evidence)

    def costless(self, seq: list[int], k: int) -> tuple[int, Acceptance]:
        """Lookup's match here, if long enough to trust, and how copies after such a tail are accepted
        (asked after every plain token: the match it saw at the last one is checked against the token since)."""
        self._settle_shadow(seq, force=False)
        match, _, tail = longest_match(seq, k, self.lookup.ngram_max)
        if len(match) < self.policy.lookup_min_match:
            return 0, Acceptance.iid(0.0)
        if self.shadow is None:
            self.shadow = Shadow(match, len(seq), tail)
        return len(match), self.lookup_odds(tail)

    def observe(self, seq: list[int]) -> None:
        """Learn what the last proposal was worth, then let both sources roll back to seq."""
        if self.pending is not None:
            self._learn(self.pending, seq)
            self.pending = None
        self._settle_shadow(seq, force=True)
        if self.model is not None:
            self.model.observe(seq)
        self.lookup.observe(seq)

    def _learn(self, pending: Pending, seq: list[int]) -> None:
        """Count what the target kept of a proposal: a lookup copy's tokens in lookup's records; a model draft's
        own tokens in its source's (with the reply it caught up on, as its top tokens would have drafted it), and a
        copy after them (if they were all kept) in lookup's; a led copy whole in lookup's (its first token the
        model's)."""
        drafts = token_ids(pending.tokens)
        accepted = common_prefix_len(drafts, seq[pending.start :])
        own = len(drafts) - pending.copied
        if pending.source != LOOKUP:
            agreed, compared = pending.read.counts() if pending.read else (0, 0)
            self.records[pending.source].add(min(accepted, own) + agreed, min(own, accepted + 1) + compared)
        if pending.source == LOOKUP or pending.led:  # a led copy's first token was the model's: the whole draft copies
            self._learn_lookup(pending.tail, accepted, min(len(drafts), accepted + 1))
        elif pending.copied and accepted >= own:
            self._learn_lookup(pending.copy_tail, accepted - own, min(pending.copied, accepted - own + 1))

    def _learn_lookup(self, tail: int, accepted: int, checked: int) -> None:
        """Count a copy after a tail of this length: its first token in that length's record and lookup's pooled
        one, the tokens after it (if it was taken) in the records of their positions."""
        if not checked:
            return
        first = min(accepted, 1)
        self.records[LOOKUP].add(first, 1)
        if (own := self.records.get(tail_name(tail))) is not None:
            own.add(first, 1)
        short = self.short_tail(tail)
        counts = {name: [0, 0] for name in position_names(short)}  # by position record: accepted, checked
        for position in range(2, checked + 1 if first else 2):
            count = counts[position_name(position, short)]
            count[0] += position <= accepted
            count[1] += 1
        for name, (taken, seen) in counts.items():  # a position this copy did not reach ages all the same
            self.records[name].add(taken, seen)

    def _settle_shadow(self, seq: list[int], force: bool) -> None:
        """Count the shadow match once seq shows where the target would have refused it or that it took it all;
        `force`: now, counting only the tokens seen (none seen: dropped)."""
        if self.shadow is None:
            return
        tokens, start, tail = self.shadow.tokens, self.shadow.start, self.shadow.tail
        seen = seq[start:]
        if not seen:  # nothing emitted since it was found: nothing to learn from it
            self.shadow = None if force else self.shadow
            return
        agree = common_prefix_len(tokens, seen)
        refused = agree < len(seen) and agree < len(tokens)
        if refused or agree == len(tokens) or force:
            self._learn_lookup(tail, agree, agree + 1 if refused else agree)
            self.shadow = None

    def reset(self) -> None:
        """Forget both sources' state (what their drafts were worth is kept: it is the pair's)."""
        self.pending = self.shadow = None
        if self.model is not None:
            self.model.reset()
        self.lookup.reset()
