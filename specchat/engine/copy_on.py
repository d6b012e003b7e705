"""A model draft copied on: where the model drafter's tokens end in a phrase the conversation already holds,
Auto appends what followed it there, so one verify pass checks both.

A summary or an edit mostly writes new text that lands, now and then, on a phrase of its source; lookup alone is
refused at the first token of most such copies, and the model drafter alone stops at its K. The model's draft
is the better guess of where the reply goes next; once it is in a copied phrase, the copy goes on at the price
of a few more verify positions (no model pass). It is priced like any round: the copy's tokens count only if
every model token before them is accepted, and they are taken only when they add more tokens than the deeper
verify pass costs.

The other way round, a led copy: where lookup's match is in doubt at its first token (prose copies a phrase of
its source, then joins it on in its own words) and a draft step is cheap next to a verify pass, the model drafts
one token and the copy follows it only where that token is the copy's first. A copy the target would refuse at
once then costs a one-token model round, not a deep verify pass for one token.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

import mlx.core as mx

from .drafters import Draft, Drafter, DraftRequest
from .lookup import longest_match, one_hot_rows
from .pass_costs import Acceptance, PassCosts
from .runner import token_ids

if TYPE_CHECKING:
    from .auto_drafter import AutoDrafter


class CopyOn(NamedTuple):
    """A copy appended to a model draft: the copied tokens, and the tail they followed (its length)."""

    tokens: list[int]
    tail: int


def copy_reach(request: DraftRequest) -> int:
    """How far a copy may go this round: the request's reach past the model drafter's K."""
    return max(request.k, request.reach)


def found_copy(seq: list[int], drafts: list[int], room: int, ngram_max: int, min_tail: int) -> CopyOn | None:
    """Up to `room` tokens of the conversation's continuation of the model draft's end, where a tail of at least
    min_tail tokens (the draft's last token among them) occurred before; None where none did."""
    match, _, tail = longest_match([*seq, *drafts], room, ngram_max, min_tail)
    return CopyOn(match, tail) if match else None


def copy_depth(
    costs: PassCosts, model_rate: float, drafted: int, copy: Acceptance, room: int, reached: float | None = None
) -> int:
    """How many copied tokens to append to a model draft of `drafted` tokens (0: none pays): the depth with the
    most expected tokens per second, the copy's counting only where the model's tokens all were accepted (their
    chance: `reached`, as Auto K's plan put it, else the model's rate to the power of its tokens)."""
    model = Acceptance.iid(model_rate)
    base_tokens, base_s = model.tokens(drafted), costs.round_s(drafted, drafted=True)
    base_verify = costs.round_s(drafted, drafted=False)
    reached = model_rate**drafted if reached is None else reached
    best, best_rate = 0, base_tokens / base_s
    for m in range(1, room + 1):
        extra_s = max(costs.round_s(drafted + m, drafted=False) - base_verify, 0.0)
        rate = (base_tokens + reached * (copy.tokens(m) - 1)) / (base_s + extra_s)
        if rate > best_rate:
            best, best_rate = m, rate
    return best


def led_copy(costs: PassCosts, copy: Acceptance, model_rate: float, room: int) -> tuple[int, float]:
    """A copy led by one model token (led_draft): its best depth in 1..room (the model's token and the copy's tokens
    after it) and its expected tokens per second. Where the target takes the copy's first token (copy.first) the
    model proposed it too, and the round is the copy's given its first token; elsewhere a one-token model round."""
    led = Acceptance(1.0, copy.then)
    alone_tokens, alone_s = Acceptance.iid(model_rate).tokens(1), costs.round_s(1, drafted=True)
    draft_s = alone_s - costs.round_s(1, drafted=False)
    best, best_rate = 1, alone_tokens / alone_s
    for m in range(2, room + 1):
        tokens = copy.first * led.tokens(m) + (1 - copy.first) * alone_tokens
        seconds = copy.first * (costs.round_s(m, drafted=False) + draft_s) + (1 - copy.first) * alone_s
        if tokens / seconds > best_rate:
            best, best_rate = m, tokens / seconds
    return best, best_rate


def led_draft(model: Drafter, request: DraftRequest, copy: list[int]) -> Draft:
    """The model drafter's one token, and behind it the rest of lookup's `copy` where that token is the copy's first
    (else the token alone)."""
    own = model.propose(replace(request, k=1))
    if own.tokens.size != 1 or token_ids(own.tokens) != copy[:1]:
        return own
    return appended(own, copy[1:])


def appended(draft: Draft, copied: list[int]) -> Draft:
    """The draft with the copied tokens after its own (when sampling, each with a one-hot probability)."""
    ids = mx.array(copied, dtype=mx.uint32)
    tokens = mx.concatenate([draft.tokens.astype(mx.uint32), ids])
    probs = draft.probs
    if probs is not None:
        probs = mx.concatenate([probs, one_hot_rows(ids, probs.shape[-1], probs.dtype)])
    return replace(draft, tokens=tokens, probs=probs, copied=len(copied))


def copied_on(auto: AutoDrafter, request: DraftRequest, draft: Draft) -> tuple[Draft, int]:
    """Auto's model draft, with what followed its end in the conversation appended where that pays, and the tail
    the copy followed (0: none appended). A constrained draft is not copied on (the grammar checks the model's
    tokens as they come)."""
    assert auto.model is not None
    room = copy_reach(request) - draft.tokens.size  # known before the draft is evaluated: a full K waits for nothing
    if request.constraint is not None or not draft.tokens.size or room <= 0:
        return draft, 0
    drafts = token_ids(draft.tokens)
    copy = found_copy(request.seq, drafts, room, auto.lookup.ngram_max, auto.policy.copy_on_min_tail)
    if copy is None:
        return draft, 0
    plan = request.plan
    reached = plan.prefix if plan is not None and plan.costs is not None else None  # Auto K's estimate
    rate, odds = auto.records[auto.model.name].rate, auto.lookup_odds(copy.tail)
    depth = copy_depth(auto.pass_costs(request), rate, len(drafts), odds, len(copy.tokens), reached)
    return (appended(draft, copy.tokens[:depth]), copy.tail) if depth else (draft, 0)
