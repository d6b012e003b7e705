"""A grammar applied to decoding: the matcher over the reply so far, and one speculative round's view of it.

The plain loop masks each step's logits with what the grammar allows. A speculative round drafts under
the mask advanced along the draft (DraftConstraint), masks the target's logits at every position with the
state after the drafts before it, and afterwards leaves the matcher at exactly the tokens the round kept.
A draft stops where the grammar forces tokens or ends: forced tokens are emitted without a model pass.
"""

from __future__ import annotations

from collections.abc import Collection

import mlx.core as mx
import numpy as np
from llguidance import LLMatcher

from .errors import EngineError
from .grammar import Grammar, ll_tokenizer, new_matcher
from .runner import common_prefix_len


class GrammarState:
    """An llguidance matcher over the reply's tokens so far: allowed next tokens, forced ones, rollback."""

    def __init__(self, matcher: LLMatcher, vocab: int, stop_ids: Collection[int]):
        self.matcher = matcher
        self.vocab = vocab
        self.stops = np.array([t for t in stop_ids if 0 <= t < vocab], dtype=np.int64)
        self.stop_ids = frozenset(stop_ids)

    @classmethod
    def start(cls, grammar: Grammar, tokenizer: object, vocab: int, stop_ids: Collection[int]) -> GrammarState:
        """The grammar at the start of a reply; ConfigError (before any model work) when it cannot be used."""
        return cls(new_matcher(grammar, ll_tokenizer(tokenizer, vocab, stop_ids)), vocab, stop_ids)

    @property
    def finished(self) -> bool:
        """True when the grammar allows nothing more (but the end of the reply)."""
        return self.matcher.is_stopped()

    def allowed(self) -> np.ndarray:
        """Which of the vocab tokens may come next (bool, shape (vocab,)); stop tokens only where it may end."""
        bits = np.frombuffer(self.matcher.compute_bitmask(), dtype=np.uint8)
        allowed = np.unpackbits(bits, bitorder="little")[: self.vocab].astype(bool)
        self._check()
        return allowed

    def forced(self) -> list[int]:
        """The tokens the grammar forces next (none when the model has a choice); not consumed."""
        return list(self.matcher.compute_ff_tokens())

    def consume(self, tokens: list[int]) -> None:
        """Advance over tokens appended to the reply."""
        if tokens and not self.matcher.consume_tokens(tokens):
            self._check()

    def rollback(self, n: int) -> None:
        """Forget the last n tokens consumed."""
        if n and not self.matcher.rollback(n):
            self._check()

    def _check(self) -> None:
        if self.matcher.is_error():
            raise EngineError(f"the grammar refused the reply: {self.matcher.get_error()}")


def fit(allowed: np.ndarray, width: int) -> mx.array:
    """A mask as an MLX array as wide as the logits it masks (rows past the grammar's vocabulary: disallowed)."""
    if allowed.shape[-1] < width:
        pad = [(0, 0)] * (allowed.ndim - 1) + [(0, width - allowed.shape[-1])]
        allowed = np.pad(allowed, pad)
    return mx.array(allowed[..., :width])


def mask_logits(logits: mx.array, allowed: np.ndarray) -> mx.array:
    """Logits with every token the grammar disallows at -inf (rows of logits against rows of allowed)."""
    return mx.where(fit(allowed, logits.shape[-1]), logits, -mx.inf)


class DraftConstraint:
    """The grammar along one round's draft: masks each draft step, gives the target a mask per position, and
    afterwards leaves the matcher at the tokens the round kept. Drafts never hold a stop token."""

    def __init__(self, state: GrammarState):
        self.state = state
        self.tokens: list[int] = []  # consumed this round, in order
        self._allowed: list[np.ndarray] = []  # _allowed[i]: what the grammar allows after tokens[:i]
        self.closed = False  # after tokens the grammar forces tokens or ends: drafting stops there

    def allowed(self) -> np.ndarray:
        """What the grammar allows after the tokens drafted so far."""
        i = len(self.tokens)
        if len(self._allowed) <= i:
            self._allowed.append(self.state.allowed())
        return self._allowed[i]

    def draft_allowed(self) -> np.ndarray:
        """allowed() without the stop tokens: a draft never ends the reply (the target may)."""
        allowed = self.allowed().copy()
        allowed[self.state.stops] = False
        return allowed

    def apply(self, logits: mx.array) -> mx.array:
        """A draft step's logits masked to what may be drafted next."""
        return mask_logits(logits, self.draft_allowed())

    def push(self, token: int) -> bool:
        """Take a drafted token; False (nothing taken) when drafting has stopped or the grammar forbids it."""
        if self.closed or token in self.state.stop_ids or not self.allowed()[token]:
            return False
        self.state.consume([token])
        self.tokens.append(token)
        self.closed = self.state.finished or bool(self.state.forced())
        return True

    def follow(self, tokens: list[int]) -> int:
        """Take tokens up to the first one refused; how many were taken."""
        for i, token in enumerate(tokens):
            if not self.push(token):
                return i
        return len(tokens)

    def settle(self, drafts: list[int]) -> int:
        """Make the tokens taken the drafts' prefix the grammar allows; returns its length."""
        agree = common_prefix_len(self.tokens, drafts)
        self._back_to(agree)
        return agree + self.follow(drafts[agree:])

    def target_allowed(self) -> np.ndarray:
        """The target's masks at each verify position: after 0, 1, ... all the drafts (rows)."""
        self.allowed()
        return np.stack(self._allowed[: len(self.tokens) + 1])

    def finish(self, emitted: list[int]) -> None:
        """The round appended `emitted` to the reply: leave the matcher right after them."""
        agree = common_prefix_len(self.tokens, emitted)
        self._back_to(agree)
        self.state.consume(emitted[agree:])
        self.tokens, self._allowed = [], []

    def _back_to(self, n: int) -> None:
        if n < len(self.tokens):
            self.state.rollback(len(self.tokens) - n)
            self.tokens, self._allowed = self.tokens[:n], self._allowed[: n + 1]
            self.closed = False  # every earlier state was open: tokens were only taken while it was
