"""The reply's tokens behind the text a client was sent: once a stop sequence cuts the text, only those up
to the cut. A round emits several tokens at once, so the tokens of one engine chunk can run past a stop
sequence: those are neither counted in usage nor given logprobs."""

from __future__ import annotations

from collections.abc import Callable

from specchat.engine.events import TextChunk
from specchat.engine.logprobs import TokenLogprob


class KeptTokens:
    """Counts the tokens behind the text sent so far and hands on their logprobs. Without stop sequences
    every token is sent as it comes; with them, a token is kept once the text sent reaches into it."""

    def __init__(self, decode: Callable[[list[int]], str], has_stops: bool):
        self.decode, self.has_stops = decode, has_stops
        self.tokens: list[int] = []  # every token the engine emitted
        self.logprobs: list[TokenLogprob] = []  # theirs, when the request asked
        self.sent_chars = 0  # characters of text sent on
        self.kept = 0  # tokens behind them
        self.kept_chars = 0  # the length of the kept tokens' text
        self.cut = False  # a stop sequence ended the text

    @property
    def count(self) -> int:
        """Tokens behind the text sent: what usage counts."""
        return self.kept

    def add(self, chunk: TextChunk, sent: str) -> list[TokenLogprob]:
        """One engine chunk and the text sent on after it; the logprobs of the tokens newly kept."""
        if self.cut:
            return []
        self.tokens.extend(chunk.token_ids)
        self.logprobs.extend(chunk.logprobs)
        self.sent_chars += len(sent)
        return self._keep(self._tokens_behind() if self.has_stops else len(self.tokens))

    def stop(self) -> None:
        """A stop sequence cut the text: no token after the kept ones counts."""
        self.cut = True

    def finish(self) -> list[TokenLogprob]:
        """The reply ended without a cut: every token counts; the logprobs not handed on yet."""
        return [] if self.cut else self._keep(len(self.tokens))

    def _keep(self, n: int) -> list[TokenLogprob]:
        if n > self.kept:
            self.kept_chars += len(self.decode(self.tokens[self.kept : n]))
        new, self.kept = self.logprobs[self.kept : n], max(self.kept, n)
        return new

    def _tokens_behind(self) -> int:
        """The fewest tokens whose text reaches the characters sent (the last may run into a stop sequence)."""
        need = self.sent_chars - self.kept_chars
        if need <= 0 or self.kept == len(self.tokens):
            return self.kept
        low, high = self.kept + 1, len(self.tokens)
        while low < high:
            mid = (low + high) // 2
            if len(self.decode(self.tokens[self.kept : mid])) >= need:
                high = mid
            else:
                low = mid + 1
        return low
