"""The decode loops: plain decoding, and one speculative loop for every drafter."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, replace

import mlx.core as mx

from .autok import AutoK
from .constraint import DraftConstraint, GrammarState, mask_logits
from .draft_stop import RoundPlan
from .drafters import CATCH_UP_IN_ROUND, Draft, Drafter
from .events import Rejection, RoundResult
from .logprobs import PassLogprobs, TokenLogprob, forced_logprobs, pass_arrays, read_logprobs
from .plain_probe import BurstClock
from .runner import ModelRunner, token_id, token_ids
from .sampling import Sampler
from .verify import verify_greedy, verify_sampled

QUEUE_VERIFY_FIRST: bool | None = None  # None: queue first on a GPU only (see _dispatch_verify)


@dataclass
class Step:
    """Tokens emitted by one step or round, and why the loop stopped (if it did)."""

    tokens: list[int]
    from_draft: list[bool]
    round: RoundResult | None = None
    stop: str | None = None
    logprobs: list[TokenLogprob] | None = None  # one per token when the config asks for logprobs


@dataclass
class LoopContext:
    """What every loop needs: the running sequence and where to stop."""

    seq: list[int]
    sampler: Sampler
    budget: int
    stop_ids: frozenset[int]
    cancel: threading.Event
    grammar: GrammarState | None = None  # the reply follows it: every step and round is masked
    logprobs: int | None = None  # None: off; else each token's logprob and that many alternatives

    def pass_logprobs(self, logits: mx.array) -> PassLogprobs | None:
        """The logprobs at each row of a pass's logits (masked, under a grammar), lazily; None when off."""
        return None if self.logprobs is None else PassLogprobs(logits, self.logprobs)

    def step_logprobs(self, logits: mx.array, token: mx.array) -> PassLogprobs | None:
        """One plain step's logprobs (logits (V,), the token it picks, still lazy), in the step's graph."""
        lp = self.pass_logprobs(logits[None])
        if lp is not None:
            lp.choose(token.reshape(1))
        return lp

    def take(self, candidates: list[int], generated: int) -> tuple[list[int], str | None]:
        """Append candidates to seq up to a stop token or the budget; return the emitted ones."""
        out: list[int] = []
        for token in candidates:
            self.seq.append(token)
            if token in self.stop_ids:
                return out, "eos"
            out.append(token)
            if generated + len(out) >= self.budget:
                return out, "length"
        return out, None


def baseline_steps(target: ModelRunner, ctx: LoopContext) -> Iterator[Step]:
    """Plain decoding, one token per step, the next step dispatched before the last is read."""
    if ctx.grammar is not None:
        yield from constrained_steps(target, ctx, ctx.grammar)
        return
    feed = mx.array(target.prepare(ctx.seq), dtype=mx.uint32)
    target.begin()
    logits = target.forward(feed)[-1]
    y, _ = ctx.sampler.pick(logits)
    lp = ctx.step_logprobs(logits, y)
    mx.async_eval(y, *pass_arrays(lp))
    generated = 0
    try:
        while True:
            target.commit_keep(feed.shape[0])
            if generated + 1 < ctx.budget and not ctx.cancel.is_set():
                feed = y.reshape(1)
                target.begin()
                logits = target.forward(feed)[-1]
                next_y, _ = ctx.sampler.pick(logits)
                next_lp = ctx.step_logprobs(logits, next_y)
                mx.async_eval(next_y, *pass_arrays(next_lp))
            emitted, stop = ctx.take([token_id(y)], generated)
            generated += len(emitted)
            logprobs = read_logprobs(lp, emitted)
            if stop is None and ctx.cancel.is_set():
                stop = "cancelled"
            if stop is not None:
                target.abort()
                yield Step(emitted, [False] * len(emitted), stop=stop, logprobs=logprobs)
                return
            yield Step(emitted, [False], logprobs=logprobs)
            y, lp = next_y, next_lp
    finally:
        target.abort()


def speculative_steps(
    target: ModelRunner, drafter: Drafter, k_max: int, ctx: LoopContext, auto: AutoK | None = None
) -> Iterator[Step]:
    """Draft, verify in one target pass, keep the agreeing prefix, roll every cache back exactly.

    With `auto`, each round's K (0 = a plain decoding round) comes from the controller.
    """
    generated, index = 0, 0
    while True:
        if ctx.grammar is not None and (forced := forced_step(ctx, ctx.grammar, generated)) is not None:
            generated += len(forced.tokens)
            yield forced
            if forced.stop is not None:
                return
            continue
        if auto is not None:
            auto.left = ctx.budget - generated  # a probe from plain decoding needs tokens left to pay
        plan = auto.plan() if auto else None
        k = min(plan.k if plan else k_max, ctx.budget - generated)
        if plan is not None:
            plan.k = k
        if auto is not None and k == 0:  # auto chose plain decoding: a pipelined burst, reported as one K=0 round
            burst = yield from _plain_burst(target, ctx, auto, index, generated)
            generated, index = generated + burst.emitted, index + 1
            if burst.stop is not None:
                return
            continue
        catch_up = drafter.unseen(ctx.seq) if hasattr(drafter, "unseen") else 0
        constraint = DraftConstraint(ctx.grammar) if ctx.grammar is not None else None
        t0 = time.perf_counter()
        if constraint is None:
            draft = drafter.propose(ctx.seq, k, ctx.sampler, plan)
        else:
            draft = _allowed_draft(drafter.propose(ctx.seq, k, ctx.sampler, plan, constraint), constraint, plan)
        mx.async_eval(draft.tokens)  # the device drafts while Python builds the verify graph
        pending, lp = _build_verify(target, ctx, draft, constraint)
        t1 = _dispatch_verify(draft.tokens, [pending, *pass_arrays(lp)])
        if lp is not None:
            mx.eval(pending, *lp.arrays())  # logprobs come with the verify pass's own evaluation
        drafts = token_ids(draft.tokens)
        if ctx.sampler.greedy:
            verdict = verify_greedy(token_ids(pending), drafts)
        else:
            assert draft.probs is not None  # a drafter gives the probabilities whenever the sampler samples
            verdict = verify_sampled(pending, drafts, draft.probs, ctx.sampler)
        tokens = verdict.tokens
        if constraint is not None and constraint.closed and verdict.accepted == len(drafts):
            tokens = tokens[:-1]  # the grammar forces what follows the drafts (or ends): no sampled token there
        emitted, stop = ctx.take(tokens, generated)
        if constraint is not None:
            constraint.finish(emitted)
            stop = stop or _grammar_end(constraint.state)
        target.commit(ctx.seq)
        drafter.commit(ctx.seq)  # a drafter that sat out plain bursts catches up at its next proposal
        t2 = time.perf_counter()
        rejection = None
        if verdict.target_choice is not None:
            n = verdict.accepted
            rejection = Rejection(generated + n, drafts[n], verdict.target_choice)
        flags = [i < verdict.accepted for i in range(len(emitted))]
        dynamic = plan is not None and plan.costs is not None
        info = RoundResult(
            index,
            len(drafts) if dynamic else k,  # an early-stopping round's K is what it drafted
            len(drafts),
            verdict.accepted,
            len(emitted),
            t1 - t0,
            t2 - t1,
            rejection,
            stopped_early=bool(plan and plan.stopped_early),
            stop_confidence=plan.stop_confidence if plan else None,
            confidences=tuple(plan.confidences) if dynamic and plan else (),
        )
        if auto:
            confidences = plan.confidences if dynamic and plan else None
            auto.observe(len(drafts), verdict.accepted, t1 - t0, t2 - t1, catch_up, confidences, draft.steps or None)
        generated += len(emitted)
        index += 1
        if stop is None and ctx.cancel.is_set():
            stop = "cancelled"
        yield Step(emitted, flags, info, stop, read_logprobs(lp, emitted))
        if stop is not None:
            return


@dataclass
class _Burst:
    emitted: int
    stop: str | None


def _plain_burst(
    target: ModelRunner, ctx: LoopContext, auto: AutoK, index: int, generated: int
) -> Generator[Step, None, _Burst]:
    """Decode up to auto.burst_length() tokens plainly; yields their steps, then one K=0 RoundResult."""
    n = min(auto.burst_length(), ctx.budget - generated)
    start, emitted, stop = time.perf_counter(), 0, None
    clock = BurstClock()
    for step in baseline_steps(target, replace(ctx, budget=n)):
        clock.step(len(step.tokens))
        emitted += len(step.tokens)
        stop = step.stop if step.stop != "length" or generated + emitted >= ctx.budget else None
        yield Step(step.tokens, step.from_draft, logprobs=step.logprobs)
    elapsed = time.perf_counter() - start
    auto.observe_plain(emitted, clock.steady_s(emitted, elapsed))
    yield Step([], [], RoundResult(index, 0, 0, 0, emitted, 0.0, elapsed), stop)
    return _Burst(emitted, stop)


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
    return Draft(draft.tokens[:n], None if draft.probs is None else draft.probs[:n], draft.steps)


def forced_step(ctx: LoopContext, grammar: GrammarState, generated: int) -> Step | None:
    """The tokens the grammar forces next, emitted without a model pass (the next pass feeds them to the
    caches), or the end of the reply where the grammar allows nothing more; None when the model chooses."""
    if grammar.finished:
        return Step([], [], stop="eos")
    forced = grammar.forced()
    if not forced:
        return None
    emitted, stop = ctx.take(forced, generated)
    grammar.consume(emitted)
    stop = stop or _grammar_end(grammar) or ("cancelled" if ctx.cancel.is_set() else None)
    logprobs = None if ctx.logprobs is None else forced_logprobs(emitted)
    return Step(emitted, [False] * len(emitted), stop=stop, logprobs=logprobs)


def _grammar_end(grammar: GrammarState) -> str | None:
    return "eos" if grammar.finished else None


def constrained_steps(target: ModelRunner, ctx: LoopContext, grammar: GrammarState) -> Iterator[Step]:
    """Plain decoding under a grammar: each step's logits masked to what it allows; forced tokens cost no pass."""
    generated = 0
    try:
        while True:
            step = forced_step(ctx, grammar, generated)
            if step is None:
                feed = mx.array(target.prepare(ctx.seq, leave=CATCH_UP_IN_ROUND), dtype=mx.uint32)
                target.begin()
                logits = target.forward(feed)[-1]
                mx.async_eval(logits)  # the device runs the pass while the grammar computes the mask
                masked = mask_logits(logits, grammar.allowed())
                y, _ = ctx.sampler.pick(masked)
                lp = ctx.step_logprobs(masked, y)  # under the mask: the distribution the token came from
                mx.eval(y, *pass_arrays(lp))
                emitted, stop = ctx.take([token_id(y)], generated)
                target.commit(ctx.seq)
                grammar.consume(emitted)
                stop = stop or _grammar_end(grammar) or ("cancelled" if ctx.cancel.is_set() else None)
                step = Step(emitted, [False] * len(emitted), stop=stop, logprobs=read_logprobs(lp, emitted))
            generated += len(step.tokens)
            yield step
            if step.stop is not None:
                return
    finally:
        target.abort()
