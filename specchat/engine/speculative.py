"""The solo speculative loop, one round at a time: plan -> draft -> verify -> accept -> report.

Around the round, as steps of their own: what the grammar forces (no model pass), and Auto K's plain
bursts (K = 0). Accepting and reporting are shared with the batch (round.py); a drafter is anything that
implements drafters.Drafter.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, replace

import mlx.core as mx

from .autok import AutoK
from .constraint import DraftConstraint, mask_logits
from .draft_stop import RoundPlan
from .drafters import CATCH_UP_IN_ROUND, Draft, Drafter, DraftRequest
from .events import RoundResult
from .logprobs import PassLogprobs, pass_arrays
from .modes import StopReason
from .plain import baseline_steps, forced_step
from .plain_probe import BurstClock
from .round import Drafted, LoopContext, Step, Timing, accept, round_step
from .runner import ModelRunner, token_ids
from .verify import Verdict, verify_greedy, verify_sampled

QUEUE_VERIFY_FIRST: bool | None = None  # None: queue first on a GPU only (see _dispatch_verify)


def speculative_steps(
    target: ModelRunner, drafter: Drafter, k_max: int, ctx: LoopContext, auto: AutoK | None = None
) -> Iterator[Step]:
    """Draft, verify in one target pass, keep the agreeing prefix, roll every cache back exactly.

    With `auto`, each round's K (0 = a plain decoding round) comes from the controller.
    """
    loop = SpeculativeLoop(target, drafter, k_max, ctx, auto)
    while True:
        for step in loop.next_steps():
            loop.generated += len(step.tokens)
            yield step
            if step.stop is not None:
                return


@dataclass
class SpeculativeLoop:
    """One sequence's rounds: what the loop holds between them, and each named step of a round."""

    target: ModelRunner
    drafter: Drafter
    k_max: int
    ctx: LoopContext
    auto: AutoK | None = None
    generated: int = 0  # tokens emitted so far (the caller counts them as it hands them on)
    index: int = 0  # rounds run so far

    def next_steps(self) -> Iterator[Step]:
        """What comes next: the grammar's forced tokens, a plain burst (Auto K chose K = 0), or a round."""
        ctx = self.ctx
        if ctx.grammar is not None and (forced := forced_step(ctx, ctx.grammar, self.generated)) is not None:
            yield forced
            return
        plan, k = self.plan()
        if self.auto is not None and k == 0 and (depth := self.costless_depth()):
            yield self.round(depth, RoundPlan(depth, self.auto.entry, None), costless=True)
        elif self.auto is not None and k == 0:
            until = None if self.auto.measuring_plain else lambda: self.costless_depth() > 0
            yield from plain_burst(self.target, ctx, self.auto, self.index, self.generated, until)
        else:
            yield self.round(k, plan)
        self.index += 1

    def costless_depth(self) -> int:
        """Where Auto K decodes plainly: how much of a draft that runs no model pass (Auto's lookup match) to verify,
        if that is expected to beat plain decoding here, else 0."""
        assert self.auto is not None
        depth, acceptance = self.drafter.costless(self.ctx.seq, self.copy_room())
        return self.auto.costless_k(depth, acceptance)

    def copy_room(self) -> int:
        """The most a draft that runs no model pass may hold: the longest draft, cut to the tokens left."""
        return min(self.k_max, self.ctx.budget - self.generated)

    def plan(self) -> tuple[RoundPlan | None, int]:
        """This round's K (cut to the budget) and, under Auto K, its drafting plan."""
        left = self.ctx.budget - self.generated
        if self.auto is None:
            return None, min(self.k_max, left)
        self.auto.left = left  # a probe from plain decoding needs tokens left to pay
        plan = self.auto.plan()
        plan.k = min(plan.k, left)
        return plan, plan.k

    def round(self, k: int, plan: RoundPlan | None, costless: bool = False) -> Step:
        """Draft, verify, accept, report (costless: drafted by a source that runs no model pass, amid plain
        decoding)."""
        ctx = self.ctx
        catch_up = self.drafter.unseen(ctx.seq)
        constraint = DraftConstraint(ctx.grammar) if ctx.grammar is not None else None
        t0 = time.perf_counter()
        draft = self.draft(k, plan, constraint, costless)
        pending, lp = _build_verify(self.target, ctx, draft, constraint)
        t1 = _dispatch_verify(draft.tokens, [pending, *pass_arrays(lp)])
        if lp is not None:
            mx.eval(pending, *lp.arrays())  # logprobs come with the verify pass's own evaluation
        drafts = token_ids(draft.tokens)
        verdict = self.verify(pending, drafts, draft)
        if constraint is not None and constraint.closed and verdict.accepted == len(drafts):
            # the grammar forces what follows the drafts (or ends): no sampled token there
            verdict = replace(verdict, tokens=verdict.tokens[:-1])
        accepted = accept(ctx, verdict, self.generated, constraint)
        self.target.commit(ctx.seq)
        self.drafter.observe(ctx.seq)  # a drafter that sat out plain bursts catches up at its next proposal
        timing = Timing(t1 - t0, time.perf_counter() - t1)
        drafted = _drafted(drafts, k, plan, draft.source)
        if self.auto is not None and (costless or draft.costless):  # the model drafter's estimates sat it out
            self.auto.observe_costless(len(drafts), verdict.accepted, timing.verify_s)
        elif self.auto is not None:  # a copy after the model's drafts is not the model drafter's (copy_on.py)
            if draft.read is not None:
                self.auto.observe_read(*draft.read.counts())
            own = len(drafts) - draft.copied
            self.auto.observe(
                own, min(verdict.accepted, own), timing.draft_s, timing.verify_s, catch_up,
                list(drafted.confidences) if plan is not None and plan.costs is not None else None,
                draft.steps or None, len(drafts),
            )  # fmt: skip
        return round_step(ctx, self.index, drafted, verdict, accepted, self.generated, timing, lp)

    def draft(self, k: int, plan: RoundPlan | None, constraint: DraftConstraint | None, costless: bool) -> Draft:
        """The drafter's proposal, dispatched (the device drafts while Python builds the verify graph)."""
        reach = self.copy_room()  # a copy is not held to the model drafter's K
        draft = self.drafter.propose(DraftRequest(self.ctx.seq, k, self.ctx.sampler, plan, constraint, costless, reach))
        if constraint is not None:
            draft = _allowed_draft(draft, constraint, plan)
        mx.async_eval(draft.tokens)
        return draft

    def verify(self, pending: mx.array, drafts: list[int], draft: Draft) -> Verdict:
        """Which drafts the target keeps: its argmax (greedy) or rejection sampling against the draft's
        probabilities."""
        if self.ctx.sampler.greedy:
            return verify_greedy(token_ids(pending), drafts)
        assert draft.probs is not None  # a drafter gives the probabilities whenever the sampler samples
        return verify_sampled(pending, drafts, draft.probs, self.ctx.sampler)


def _drafted(drafts: list[int], k: int, plan: RoundPlan | None, source: str = "") -> Drafted:
    """The round's drafts as its report shows them: an early-stopping round's K is what it drafted; `source`:
    the drafter Auto picked for the round."""
    if plan is None:
        return Drafted(drafts, k, source=source)
    dynamic = plan.costs is not None
    return Drafted(
        drafts,
        len(drafts) if dynamic else k,
        plan.stopped_early,
        plan.stop_confidence,
        tuple(plan.confidences) if dynamic else (),
        source,
    )


def plain_burst(
    target: ModelRunner,
    ctx: LoopContext,
    auto: AutoK,
    index: int,
    generated: int,
    until: Callable[[], bool] | None = None,
) -> Generator[Step, None, None]:
    """Decode up to auto.burst_length() tokens plainly, ending early once `until()` holds (a costless draft pays:
    the token already in flight is the last); yields their steps, then one K=0 RoundResult."""
    n = min(auto.burst_length(), ctx.budget - generated)
    start, emitted, stop = time.perf_counter(), 0, None
    clock = BurstClock()
    for step in baseline_steps(target, replace(ctx, budget=n), until):
        clock.step(len(step.tokens))
        emitted += len(step.tokens)
        stop = step.stop if step.stop != StopReason.LENGTH or generated + emitted >= ctx.budget else None
        yield Step(step.tokens, step.from_draft, logprobs=step.logprobs)
    elapsed = time.perf_counter() - start
    auto.observe_plain(emitted, clock.steady_s(emitted, elapsed))
    yield Step([], [], RoundResult(index, 0, 0, 0, emitted, 0.0, elapsed), stop)


def queue_verify_first() -> bool:
    """Whether to queue the verify pass before waiting for the drafts (QUEUE_VERIFY_FIRST, else by device)."""
    if QUEUE_VERIFY_FIRST is not None:
        return QUEUE_VERIFY_FIRST
    return mx.default_device().type == mx.DeviceType.gpu


def _dispatch_verify(drafts: mx.array, verify: list[mx.array]) -> float:
    """Wait for the drafts (already dispatched), on a GPU with the verify pass queued first; returns when
    the drafts were in.

    Waiting on a dispatched array waits for its own completion only, so on a GPU the device goes
    straight from drafting to verifying. MLX's CPU backend caps the tasks in flight: there async_eval
    of a whole forward pass returns only when most of it has run, so queueing first would bill the
    verify to drafting; on the CPU the verify runs when its result is read, one call fewer."""
    if queue_verify_first():
        mx.async_eval(*verify)
    mx.eval(drafts)
    return time.perf_counter()


def _build_verify(
    target: ModelRunner, ctx: LoopContext, draft: Draft, constraint: DraftConstraint | None
) -> tuple[mx.array, PassLogprobs | None]:
    """The target's pass over [last token] + drafts, not yet run; greedy gives its argmax, else its logits.
    Under a grammar each position's logits are masked with the grammar after the drafts before it, and the
    tokens it forced last round come in the same pass. With logprobs on, their graph over the same logits."""
    feed = mx.array(target.prepare(ctx.seq, leave=CATCH_UP_IN_ROUND if constraint else 1), dtype=mx.uint32)
    target.begin()
    logits = target.forward(mx.concatenate([feed, draft.tokens]))[feed.shape[0] - 1 :]
    if constraint is not None:
        logits = mask_logits(logits, constraint.target_allowed())
    lp = ctx.pass_logprobs(logits)
    if not ctx.sampler.greedy:
        return logits, lp
    choices = mx.argmax(logits, axis=-1)
    if lp is not None:
        lp.choose(choices)  # greedy emits the argmax at every position it keeps (accepted drafts equal it)
    return choices, lp


def _allowed_draft(draft: Draft, constraint: DraftConstraint, plan: RoundPlan | None) -> Draft:
    """The draft cut to what the grammar allows, the constraint left right after it (a drafter that ignored
    the constraint, or consumed past the draft it returned, is brought into line here)."""
    drafts = token_ids(draft.tokens)
    n = constraint.settle(drafts)
    if n == len(drafts):
        return draft
    if plan is not None:
        del plan.confidences[n:]
    copied = max(0, n - (len(drafts) - draft.copied))  # the copy is the draft's tail: what of it survives the cut
    probs = None if draft.probs is None else draft.probs[:n]
    return replace(draft, tokens=draft.tokens[:n], probs=probs, copied=copied)
