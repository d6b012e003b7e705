"""Plain decoding, one token per step: unconstrained (the next step dispatched before the last is read), under
a grammar (each step masked; forced tokens cost no pass), and the grammar's forced steps themselves."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import mlx.core as mx

from .constraint import GrammarState, mask_logits
from .drafters import CATCH_UP_IN_ROUND
from .logprobs import forced_logprobs, pass_arrays, read_logprobs
from .modes import StopReason
from .round import LoopContext, Step
from .runner import ModelRunner, token_id


def baseline_steps(target: ModelRunner, ctx: LoopContext, until: Callable[[], bool] | None = None) -> Iterator[Step]:
    """Plain decoding, one token per step, the next step dispatched before the last is read; once `until()` holds
    after a token, the step already in flight is the last (no pass is thrown away)."""
    if ctx.grammar is not None:
        yield from constrained_steps(target, ctx, ctx.grammar, until)
        return
    feed = mx.array(target.prepare(ctx.seq), dtype=mx.uint32)
    target.begin()
    logits = target.forward(feed)[-1]
    y, _ = ctx.sampler.pick(logits)
    lp = ctx.step_logprobs(logits, y)
    mx.async_eval(y, *pass_arrays(lp))
    generated, limit = 0, ctx.budget
    try:
        while True:
            target.commit_keep(feed.shape[0])
            if generated + 1 < limit and not ctx.cancel.is_set():
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
                stop = StopReason.CANCELLED
            if stop is not None:
                target.abort()
                yield Step(emitted, [False] * len(emitted), stop=stop, logprobs=logprobs)
                return
            yield Step(emitted, [False], logprobs=logprobs)
            if generated >= limit:
                return
            if until is not None and limit == ctx.budget and until():
                limit = generated + 1
            y, lp = next_y, next_lp
    finally:
        target.abort()


def forced_step(ctx: LoopContext, grammar: GrammarState, generated: int) -> Step | None:
    """The tokens the grammar forces next, emitted without a model pass (the next pass feeds them to the
    caches), or the end of the reply where the grammar allows nothing more; None when the model chooses."""
    if grammar.finished:
        return Step([], [], stop=StopReason.EOS)
    forced = grammar.forced()
    if not forced:
        return None
    emitted, stop = ctx.take(forced, generated)
    grammar.consume(emitted)
    stop = stop or _grammar_end(grammar) or (StopReason.CANCELLED if ctx.cancel.is_set() else None)
    logprobs = None if ctx.logprobs is None else forced_logprobs(emitted)
    return Step(emitted, [False] * len(emitted), stop=stop, logprobs=logprobs)


def _grammar_end(grammar: GrammarState) -> StopReason | None:
    return StopReason.EOS if grammar.finished else None


def constrained_steps(
    target: ModelRunner, ctx: LoopContext, grammar: GrammarState, until: Callable[[], bool] | None = None
) -> Iterator[Step]:
    """Plain decoding under a grammar: each step's logits masked to what it allows; forced tokens cost no pass;
    it ends after a step where `until()` holds."""
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
                stop = stop or _grammar_end(grammar) or (StopReason.CANCELLED if ctx.cancel.is_set() else None)
                step = Step(emitted, [False] * len(emitted), stop=stop, logprobs=read_logprobs(lp, emitted))
            generated += len(step.tokens)
            yield step
            if step.stop is not None or (until is not None and until()):
                return
    finally:
        target.abort()
