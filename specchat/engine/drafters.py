"""Draft sources for the speculative loop: propose k tokens, then learn what was kept."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple, Protocol, cast

import mlx.core as mx

from .constraint import DraftConstraint
from .draft_stop import RoundPlan
from .pass_costs import Acceptance
from .runner import LayerCapture, ModelRunner, token_id
from .sampling import Sampler

if TYPE_CHECKING:
    from .config import GenerationConfig

CATCH_UP_IN_ROUND = 32  # a draft further behind (after plain bursts) is prefilled first


@dataclass
class Draft:
    """Proposed tokens (lazy, shape (k,)) and, when sampling, the probabilities they came from (k, V);
    steps: the draft steps run (one more than the tokens when the last one was dropped as too unsure)."""

    tokens: mx.array
    probs: mx.array | None
    steps: int = 0
    source: str = ""  # which drafter proposed them, when one drafter picks among others (auto_drafter.py)
    costless: bool = False  # drafted without a model pass where a model drafter sits out (Auto's lookup rounds)
    copied: int = 0  # tokens copied from the conversation after the model drafter's own (copy_on.py)
    read: CatchUp | None = None  # greedy: how the draft model's top tokens agreed with the reply it caught up on

    @classmethod
    def from_steps(
        cls, tokens: list[mx.array], probs: Sequence[mx.array | None], sampler: Sampler, steps: int | None = None
    ) -> Draft:
        """A draft from per-step tokens and probabilities (the probabilities only when sampling: None when greedy)."""
        stacked = None if sampler.greedy else mx.stack([p for p in probs if p is not None])
        return cls(mx.stack(tokens).reshape(-1), stacked, len(tokens) if steps is None else steps)


class CatchUp(NamedTuple):
    """Of the reply's tokens a draft model caught up on (rounds another source drafted, plain bursts), how many its
    own top token predicted (lazy): under greedy decoding, how many of its drafts there the target would have taken."""

    agreed: mx.array
    compared: int

    def counts(self) -> tuple[int, int]:
        """(agreed, compared), waiting for the agreement."""
        return int(cast(int, self.agreed.item())), self.compared


def caught_up(logits: mx.array, feed: mx.array) -> CatchUp | None:
    """How the logits of a fed run of tokens predicted each next one (None: a run of one predicts nothing fed)."""
    if feed.shape[0] < 2:
        return None
    agreed = mx.sum(mx.argmax(logits[:-1], axis=-1).astype(feed.dtype) == feed[1:])
    return CatchUp(agreed, feed.shape[0] - 1)


def top1(logits: mx.array) -> float:
    """The draft's confidence in its next token: the top-1 probability of its distribution (waits for it)."""
    return float(cast(float, mx.max(mx.softmax(logits.astype(mx.float32), axis=-1)).item()))


class DraftSteps:
    """A draft built one step at a time, stopping where the round's plan says the drafter is too unsure;
    under a grammar each step drafts from what it allows (masked, renormalised) and reads its token."""

    def __init__(self, k: int, sampler: Sampler, plan: RoundPlan | None, constraint: DraftConstraint | None = None):
        self.k, self.sampler, self.constraint = k, sampler, constraint
        self.plan = plan if plan is not None and plan.costs is not None else None  # no early stop: no waiting
        self.tokens: list[mx.array] = []
        self.probs: list[mx.array | None] = []
        self.steps = 0

    @classmethod
    def of(cls, request: DraftRequest) -> DraftSteps:
        """The steps of a round's draft request."""
        return cls(request.k, request.sampler, request.plan, request.constraint)

    def add(self, logits: mx.array) -> mx.array | None:
        """Draft from a step's logits; returns the token to feed the next step, or None when drafting ends."""
        if self.constraint is not None:
            logits = self.constraint.apply(logits)
        token, p = self.sampler.pick(logits)
        self.steps += 1
        keep, more = (True, self.steps < self.k) if self.plan is None else self.plan.take(top1(logits))
        if keep and self.constraint is not None:
            keep = self.constraint.push(token_id(token))
            more = more and keep and not self.constraint.closed
            if not keep and self.plan is not None:  # nothing left that may be drafted: the plan took it
                self.plan.confidences.pop()
        if keep:
            self.tokens.append(token)
            self.probs.append(p)
        return token if keep and more and self.steps < self.k else None

    def draft(self) -> Draft:
        """What was drafted."""
        return Draft.from_steps(self.tokens, self.probs, self.sampler, self.steps)


@dataclass(frozen=True)
class DraftRequest:
    """What a round asks of its drafter: up to k tokens after seq."""

    seq: list[int]  # the sequence so far: prompt and reply (the drafter must not change it)
    k: int  # the most tokens to draft
    sampler: Sampler  # how to pick each token (greedy, or sampled with the reply's settings)
    plan: RoundPlan | None = None  # Auto K's early stop: call plan.take(confidence) after each token
    constraint: DraftConstraint | None = None  # a grammar: draft only what it allows, pushing each token on
    costless: bool = False  # draft only from a source that runs no model pass (Auto's rounds amid plain decoding)
    reach: int = 0  # the most a source that runs no model pass may copy, past k (0: k)


@dataclass(frozen=True)
class TargetTaps:
    """What the target's passes feed a drafter during one generation (ModelRunner sets them on its calls)."""

    hidden_sink: Callable[[int, mx.array], None] | None = None  # the last hidden state by position (MTP head)
    layer_capture: LayerCapture | None = None  # chosen layers' outputs by position (DFlash)


NO_TAPS = TargetTaps()


class Drafter(Protocol):
    """What the speculative loop needs from a draft source (docs/architecture.md: adding a drafter).
    A drafter may subclass it explicitly to take the defaults of `one_pass_draft` and `begin`."""

    name: str
    one_pass_draft: bool = False  # True: any K is one forward pass (a block drafter); Auto K bills a round one pass

    def begin(self, cfg: GenerationConfig) -> TargetTaps:
        """A generation begins: take its settings, forget rows of other sequences, and say what the target's
        passes must feed this drafter (nothing, by default)."""
        return NO_TAPS

    def prefill_steps(self, seq: list[int]) -> Iterator[tuple[int, int]]:
        """Process the prompt ahead of the first round, a chunk at a time: (done, total) after each."""

    def unseen(self, seq: list[int]) -> int:
        """Tokens of seq the drafter has not read yet (its next proposal catches up on them; Auto K bills it)."""

    def propose(self, request: DraftRequest) -> Draft:
        """Guess the next request.k tokens after request.seq (fewer where the plan stops early); under a
        constraint only tokens it allows, pushed onto it."""

    def observe(self, seq: list[int]) -> None:
        """The round kept seq (the target holds seq[:-1]): drop whatever the drafter holds beyond it."""

    def reset(self) -> None:
        """Forget all state (after an error)."""

    def costless(self, seq: list[int], k: int) -> tuple[int, Acceptance]:
        """A draft of up to k tokens after seq that runs no model pass (a copy from the conversation): its length
        and how its tokens are accepted. Length 0, by default: none. Auto K weighs it where it would decode
        plainly (speculative.py), and asks for it with DraftRequest.costless."""
        return 0, Acceptance.iid(0.0)


class DraftModelDrafter(Drafter):
    """A smaller model with the same vocabulary drafts autoregressively."""

    name = "draft"

    def __init__(self, runner: ModelRunner):
        self.runner = runner

    def prefill_steps(self, seq: list[int]) -> Iterator[tuple[int, int]]:
        """Prefill the draft model's caches with all but the last token, a chunk at a time."""
        yield from self.runner.prepare_steps(seq)

    def unseen(self, seq: list[int]) -> int:
        """Tokens of seq the draft model has not taken in yet (its next proposal catches up on them)."""
        return max(len(seq) - len(self.runner.tokens), 0)

    def propose(self, request: DraftRequest) -> Draft:
        """Run the draft model up to k steps; without an early-stop plan or a grammar the tokens stay lazy
        until the target verifies them (with one, each step's token or confidence is read before the next)."""
        # What the draft has not seen yet (usually the last draft after a full accept, plus the
        # target's token) goes into its first step, as one call.
        feed = mx.array(self.runner.prepare(request.seq, leave=CATCH_UP_IN_ROUND), dtype=mx.uint32)
        self.runner.begin()
        steps = DraftSteps.of(request)
        logits = self.runner.forward(feed)
        read = caught_up(logits, feed) if request.sampler.greedy else None
        while (token := steps.add(logits[-1])) is not None:
            feed = token.reshape(1)
            mx.async_eval(feed)
            logits = self.runner.forward(feed)
        return replace(steps.draft(), read=read)

    def observe(self, seq: list[int]) -> None:
        """Roll the draft caches back to the part of seq they agree with (a round it did not draft in, under
        Auto, leaves them as they are: its next proposal catches up)."""
        if self.runner.in_round:
            self.runner.commit(seq)

    def reset(self) -> None:
        """Drop the draft model's caches."""
        self.runner.reset()
