"""One speculative round's shared half, for the solo loop and the batch alike: the running sequence a loop
keeps (LoopContext), what a step emits (Step), and what a round does once the target has verified its
drafts: keep the accepted tokens up to a stop (accept) and report the round (round_step).

A round is draft -> verify -> accept -> report. Drafting and verifying differ between one sequence
(speculative.py) and a batch of them (batch/batch_round.py); accepting and reporting are written here once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import mlx.core as mx

from .constraint import DraftConstraint, GrammarState
from .events import Rejection, RoundResult
from .logprobs import PassLogprobs, TokenLogprob, read_logprobs
from .modes import StopReason
from .sampling import Sampler
from .verify import Verdict


@dataclass
class Step:
    """Tokens emitted by one step or round, and why the loop stopped (if it did)."""

    tokens: list[int]
    from_draft: list[bool]
    round: RoundResult | None = None
    stop: StopReason | None = None
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

    def take(self, candidates: list[int], generated: int) -> tuple[list[int], StopReason | None]:
        """Append candidates to seq up to a stop token or the budget; return the emitted ones."""
        out: list[int] = []
        for token in candidates:
            self.seq.append(token)
            if token in self.stop_ids:
                return out, StopReason.EOS
            out.append(token)
            if generated + len(out) >= self.budget:
                return out, StopReason.LENGTH
        return out, None


@dataclass(frozen=True)
class Drafted:
    """What a round drafted, as its report shows it: the drafts the target verified, the K the round counts
    and, with an early-stopping plan, where and how sure the drafter stopped."""

    tokens: list[int]
    k: int
    stopped_early: bool = False
    stop_confidence: float | None = None
    confidences: tuple[float, ...] = ()
    source: str = ""  # the drafter that proposed them, when Auto picks one per round


@dataclass(frozen=True)
class Timing:
    """How long a round took: drafting, and verifying with everything after it."""

    draft_s: float = 0.0
    verify_s: float = 0.0


def accept(
    ctx: LoopContext, verdict: Verdict, generated: int, constraint: DraftConstraint | None = None
) -> tuple[list[int], StopReason | None]:
    """Append the tokens the target kept to the sequence, up to a stop token or the budget; the grammar
    (advanced along the drafts by `constraint`, or not at all) is left right after them. Returns the
    emitted tokens and the stop, if the round ended the reply."""
    emitted, stop = ctx.take(verdict.tokens, generated)
    if constraint is not None:
        constraint.finish(emitted)
    elif ctx.grammar is not None:
        ctx.grammar.consume(emitted)
    if stop is None and ctx.grammar is not None and ctx.grammar.finished:
        stop = StopReason.EOS
    return emitted, stop


def round_step(
    ctx: LoopContext,
    index: int,
    drafted: Drafted,
    verdict: Verdict,
    accepted: tuple[list[int], StopReason | None],
    generated: int,
    timing: Timing = Timing(),
    lp: PassLogprobs | None = None,
) -> Step:
    """The round's Step: its emitted tokens flagged by where they came from, its RoundResult, its stop (a
    cancel seen now ends the reply too) and its logprobs. `generated`: tokens before the round."""
    emitted, stop = accepted
    n = verdict.accepted
    rejection = None
    if verdict.target_choice is not None:
        proposed = drafted.tokens[n] if n < len(drafted.tokens) else -1
        rejection = Rejection(generated + n, proposed, verdict.target_choice)
    info = RoundResult(
        index, drafted.k, len(drafted.tokens), n, len(emitted), timing.draft_s, timing.verify_s, rejection,
        drafted.stopped_early, drafted.stop_confidence, drafted.confidences, drafted.source,
    )  # fmt: skip
    if stop is None and ctx.cancel.is_set():
        stop = StopReason.CANCELLED
    flags = [i < n for i in range(len(emitted))]
    return Step(emitted, flags, info, stop, read_logprobs(lp, emitted))
