"""One model running several sequences in one forward pass, each row rolled back on its own."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import cast

import mlx.core as mx

from specchat.upstream.hidden_capture import capture_forward
from specchat.upstream.mlx_lm import ArraysCache

from .. import gdn_capture
from ..events import Event, PrefillProgress
from ..model_types import Cache, HiddenModel, LanguageModel
from ..prefill_pace import PrefillPace
from ..rollback import linear_layers
from ..runner import LayerCapture, ModelRunner, fresh_caches
from .row_cache import BatchCache, append_row, keep_rows, row_caches
from .row_rollback import RowTransaction


def solo_prefill(
    model: LanguageModel,
    tokens: list[int],
    chunk: int | None,
    start: tuple[int, list[Cache] | None] = (0, None),
    hidden: bool = False,
    pace: PrefillPace | None = None,
    capture: LayerCapture | None = None,
) -> Generator[tuple[int, int], None, tuple[list[Cache], mx.array | None]]:
    """Read one newcomer's tokens alone, `chunk` at a time (None: sized from `pace`, the model's measured
    prefill costs, which this prefill adds to), yielding (done, total); returns its caches and, with `hidden`,
    the model's final hidden state (H,) at its last token (None when every token was held).
    `start`: caches that already hold the first n tokens (a finished row's, see prefix_store); `capture`: the
    layers a DFlash drafter reads, handed to it as they are read."""
    solo = ModelRunner(model)
    solo.layer_capture = capture
    if pace is not None:
        solo.pace = pace
    solo.prefill_chunk = chunk
    held, caches = start
    if caches is not None:
        solo.caches, solo.tokens = caches, tokens[:held]
    last: list[mx.array] = []
    if hidden:
        solo.hidden_sink = lambda _position, rows: last.append(rows[-1])
    yield from solo.prefill_chunks(tokens[len(solo.tokens) :])
    return list(solo.caches), (last[-1] if last else None)


class BatchModel:
    """A model, its batch caches and, per row, how many tokens of its sequence they hold."""

    def __init__(self, model: LanguageModel, name: str = "model"):
        self.model, self.name = model, name
        self.caches: list[BatchCache] = row_caches(fresh_caches(model))
        self.hybrid = any(isinstance(c, ArraysCache) for c in self.caches)
        self.linear_layers = linear_layers(model) if self.hybrid else {}
        if self.hybrid:
            gdn_capture.install(model)
        self.held: list[int] = []  # per row: tokens of its sequence the caches hold
        self.want_hidden = False  # set while MTP rows run: forward() keeps the final hidden states too
        self.hidden: mx.array | None = None  # (B, L, H) of the last forward() with want_hidden, lazily
        self.capture: tuple[int, ...] = ()  # set while DFlash rows run: forward() keeps these layers' outputs too
        self.layers: mx.array | None = None  # (B, L, n * H) of the last forward() with capture, lazily
        self._txn: RowTransaction | None = None

    def add_row(self, solo: Sequence[Cache], held: int) -> None:
        """Add a sequence read alone (its one-row mlx-lm caches hold `held` tokens) as the last row."""
        append_row(self.caches, solo)
        self.held.append(held)
        self._settle()

    def keep_rows(self, rows: Sequence[int]) -> None:
        """Keep only these rows, in this order (the others left the batch)."""
        keep_rows(self.caches, rows)
        self.held = [self.held[r] for r in rows]
        self._settle()

    def _settle(self) -> None:
        """Copy the rows into their new batch now: left lazy, the copy would be timed as the next round's and
        the batch's cost table would price that size's rounds with it."""
        mx.eval([c.state for c in self.caches])

    def forward(self, feeds: Sequence[Sequence[int]]) -> mx.array:
        """Feed row b the tokens feeds[b] (right-padded to the longest); logits (B, L, V), lazily.
        A row's padding is masked and never held: its next feed starts right after its real tokens."""
        width = max(len(f) for f in feeds)
        padded = [list(f) + [f[-1]] * (width - len(f)) for f in feeds]
        return self._run(mx.array(padded, dtype=mx.uint32), [len(f) for f in feeds])

    def forward_tokens(self, tokens: mx.array) -> mx.array:
        """Feed every row the same number of tokens, (B, L) still lazy; logits (B, L, V)."""
        return self._run(tokens, [tokens.shape[1]] * tokens.shape[0])

    def _run(self, tokens: mx.array, real: list[int]) -> mx.array:
        width = tokens.shape[1]
        ragged = any(n != width for n in real)
        for cache in self.caches:
            if isinstance(cache, ArraysCache):
                cache.lengths = mx.array(real) if ragged else None  # type: ignore[assignment]
        if self._txn is None:
            logits = self._call(tokens)
        else:
            with self._txn.feeding(real):
                logits = self._call(tokens)
        for cache in self.caches:
            if isinstance(cache, ArraysCache):
                cache.lengths = None
            else:
                cache.lengths = [n - width + r for n, r in zip(cache.lengths, real)]
        self.held = [h + r for h, r in zip(self.held, real)]
        return logits

    def _call(self, tokens: mx.array) -> mx.array:
        self.layers = None
        if self.capture:
            assert not self.want_hidden, "admission keeps DFlash rows off a target with its own MTP head"
            self.hidden = None
            captured, layers = capture_forward(self.model, tokens, self.caches, self.capture)
            self.layers = layers[0] if len(layers) == 1 else mx.concatenate(layers, axis=-1)
            return captured
        if not self.want_hidden:
            self.hidden = None
            out: mx.array = self.model(tokens, cache=self.caches)
            return out
        logits: mx.array
        logits, self.hidden = cast(HiddenModel, self.model)(tokens, cache=self.caches, return_hidden=True)
        return logits

    def begin(self) -> None:
        """Open a round: every row's tokens fed until commit can be rolled back."""
        self._txn = RowTransaction(self.caches)
        self._start = list(self.held)

    def commit(self, keep: Sequence[int]) -> None:
        """Row b keeps the first keep[b] tokens it was fed since begin(); the round ends."""
        assert self._txn is not None, "no round is open: begin() opens one"
        self._txn.commit(keep, self.linear_layers)
        self.held = [s + k for s, k in zip(self._start, keep)]
        self._txn = None


def progress_events(
    steps: Generator[tuple[int, int], None, tuple[list[Cache], mx.array | None]], model: str
) -> Generator[Event, None, tuple[list[Cache], mx.array | None]]:
    """solo_prefill's (done, total) as PrefillProgress events; returns what it returns."""
    while True:
        try:
            done, total = next(steps)
        except StopIteration as end:
            result: tuple[list[Cache], mx.array | None] = end.value
            return result
        yield PrefillProgress(done, total, model)
