"""A model, its caches and the exact tokens those caches hold."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import mlx.core as mx
import mlx.nn as nn

from specchat.upstream.hidden_capture import capture_forward
from specchat.upstream.mlx_lm import (
    ArraysCache,
    ArraysState,
    arrays_cache_state,
    make_prompt_cache,
    set_arrays_cache_state,
)

from . import gdn_capture
from .model_types import Cache, HiddenModel, LanguageModel, TrimmableCache
from .prefill_pace import PrefillPace, pin_if_sharded
from .rollback import TRIMMABLE, Transaction, check_supported, linear_layers

MAX_CHECKPOINTS = 2
# Per cache, in order: an ArraysCache's states, any other cache's offset.
Checkpoint = list[ArraysState | int]


def fresh_caches(model: LanguageModel, max_kv_size: int | None = None) -> list[Cache]:
    """mlx-lm's empty caches for the model, one per layer (mlx-lm annotates its models as a bare nn.Module)."""
    return make_prompt_cache(cast(nn.Module, model), max_kv_size)


def token_ids(tokens: mx.array) -> list[int]:
    """A 1-D integer array as a list of ints (mlx's stubs type tolist() as any nesting of any scalar)."""
    return cast(list[int], tokens.tolist())


def token_id(token: mx.array) -> int:
    """A one-element integer array as an int (mlx's stubs type item() as int | float | complex)."""
    return cast(int, token.item())


@dataclass(frozen=True)
class LayerCapture:
    """What a drafter that reads the target's inner layers (DFlash) asks of every target pass: the outputs of
    these layers, concatenated on the feature axis, handed to sink(first position, rows (T, n * H))."""

    layer_ids: tuple[int, ...]
    sink: Callable[[int, mx.array], None]


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    if len(a) <= len(b) and a == b[: len(a)]:  # the usual case, at C speed
        return len(a)
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def held_agreement(held: list[int], seq: list[int], prefix_of: list[int] | None) -> int:
    """How many of `held` agree with seq. `prefix_of` is a sequence held is known to begin, and rounds only
    ever append to it (LoopContext.take): for it this is free; any other seq is compared token by token.
    So a round costs O(K), not O(conversation length)."""
    if seq is prefix_of and len(held) <= len(seq):
        return len(held)
    return common_prefix_len(held, seq)


class ModelRunner:
    """Runs one model over a token sequence; rounds are transactions on its caches."""

    def __init__(self, model: LanguageModel, name: str = "model", max_kv_size: int | None = None):
        self.model = model
        self.name = name
        self.max_kv_size = max_kv_size
        self.caches = fresh_caches(model, max_kv_size)
        check_supported(self.caches)
        self.hybrid = any(isinstance(c, ArraysCache) for c in self.caches)
        self.linear_layers = linear_layers(model) if self.hybrid else {}  # walked once: rollback needs it often
        if self.hybrid:
            gdn_capture.install(model)
        self._tokens: list[int] = []
        self._lazy: list[mx.array] = []
        self._fed: list[mx.array] = []
        self._txn: Transaction | None = None
        self._checkpoints: list[tuple[int, Checkpoint]] = []
        self._prefix_of: list[int] | None = None  # a sequence the held tokens are known to begin
        self.pace = PrefillPace()  # the prefill chunks' measured costs: they size the next chunk
        pin_if_sharded(model)
        self._fixed_chunk: int | None = None  # prefill_chunk set by a caller (tests): no sizing from the pace
        # When set, every forward pass also hands (first position, hidden states (T, H)) to it;
        # the model must accept return_hidden=True (an mlx-optiq MTP-attached model does).
        self.hidden_sink: Callable[[int, mx.array], None] | None = None
        # When set, every forward pass runs through upstream's capture_forward (the same layers, masks and
        # caches as the model's own call) and hands the chosen layers' outputs to it; see LayerCapture.
        self.layer_capture: LayerCapture | None = None

    def reset(self) -> None:
        """Forget everything: fresh caches, no tokens."""
        self.caches = fresh_caches(self.model, self.max_kv_size)
        self._tokens, self._lazy, self._fed, self._txn, self._checkpoints = [], [], [], None, []
        self._prefix_of = None

    def hand_over(self) -> tuple[list[int], list[Cache]]:
        """The tokens the caches hold and the caches themselves, given away: the runner starts afresh."""
        held, caches = list(self.tokens), list(self.caches)
        self.reset()
        return held, caches

    def take_over(self, caches: list[Cache], tokens: list[int]) -> None:
        """Hold these caches (another runner's, or a batch row's) over these tokens from now on."""
        self.reset()
        self.caches, self.tokens = caches, tokens

    @property
    def prefill_chunk(self) -> int:
        """Tokens per prefill step (cancel and progress act between steps): what was set, or about
        PREFILL_CHUNK_S of this model's measured pace (None set: the pace again)."""
        return self._fixed_chunk if self._fixed_chunk is not None else self.pace.chunk()

    @prefill_chunk.setter
    def prefill_chunk(self, value: int | None) -> None:
        self._fixed_chunk = value

    @property
    def tokens(self) -> list[int]:
        """The tokens the caches hold, in order."""
        if self._lazy:
            self._tokens.extend(t for arr in self._lazy for t in token_ids(arr))
            self._lazy = []
        return self._tokens

    @tokens.setter
    def tokens(self, value: list[int]) -> None:
        self._tokens, self._lazy, self._prefix_of = list(value), [], None

    def _agreement(self, seq: list[int]) -> int:
        """How many held tokens agree with seq (free for the sequence the last prepare() synced with)."""
        return held_agreement(self.tokens, seq, self._prefix_of)

    def forward(self, tokens: mx.array) -> mx.array:
        """Feed tokens (1-D) and return logits for every position, shape (T, V)."""
        if self._txn is None:
            logits, _ = self._call(tokens)
            self._lazy.append(tokens)
            return logits
        with self._txn.feeding(tokens.shape[0]):
            logits, _ = self._call(tokens)
        self._fed.append(tokens)
        return logits

    def _call(self, tokens: mx.array) -> tuple[mx.array, mx.array | None]:
        """One model call on tokens (1-D): logits (T, V), and hidden states when a sink wants them."""
        if self.layer_capture is not None:
            return self._call_capturing(tokens, self.layer_capture)
        if self.hidden_sink is None:
            return self.model(tokens[None], cache=self.caches)[0], None
        position = len(self._tokens) + sum(a.shape[0] for a in self._lazy + self._fed)
        model = cast(HiddenModel, self.model)  # hidden_sink is set only on a target with an MTP head
        logits, hidden = model(tokens[None], cache=self.caches, return_hidden=True)
        self.hidden_sink(position, hidden[0])
        return logits[0], hidden[0]

    def _call_capturing(self, tokens: mx.array, capture: LayerCapture) -> tuple[mx.array, mx.array]:
        """One model call that also hands the captured layers' outputs (T, n * H) to capture.sink."""
        position = len(self._tokens) + sum(a.shape[0] for a in self._lazy + self._fed)
        logits, layers = capture_forward(self.model, tokens[None], self.caches, capture.layer_ids)
        rows = layers[0][0] if len(layers) == 1 else mx.concatenate(layers, axis=-1)[0]
        capture.sink(position, rows)
        return logits[0], rows

    def prefill(self, tokens: list[int]) -> None:
        """Process tokens in chunks, outside any round, and checkpoint the end."""
        for _ in self.prefill_chunks(tokens):
            pass

    def prefill_chunks(self, tokens: list[int]) -> Iterator[tuple[int, int]]:
        """Process tokens `prefill_chunk` at a time (sized again after each chunk), yielding (done, total)
        after each chunk; checkpoint the end. A caller that stops early leaves the caches holding exactly the
        chunks done."""
        self._prefix_of = None
        done = 0
        while done < len(tokens):
            chunk = tokens[done : done + max(int(self.prefill_chunk), 1)]
            start = time.perf_counter()
            _, hidden = self._call(mx.array(chunk, dtype=mx.uint32))
            mx.eval([c.state for c in self.caches], hidden)
            self.pace.add(len(chunk), time.perf_counter() - start)
            self.tokens.extend(chunk)
            done += len(chunk)
            yield done, len(tokens)
        if tokens:
            self._checkpoint()

    def prepare(self, seq: list[int], leave: int = 1) -> list[int]:
        """Bring the caches to a prefix of seq; prefill all but the last `leave` missing tokens and return
        those (at least one): a caller that feeds them with its next pass saves a call and a wait.
        While rounds run on seq, the caller may only append to it (see _agreement); prepare_steps() is the
        same a chunk at a time."""
        for _ in self.prepare_steps(seq, leave):
            pass
        return seq[len(self.tokens) :]

    def prepare_steps(self, seq: list[int], leave: int = 1) -> Iterator[tuple[int, int]]:
        """prepare() one chunk at a time: yields (done, total) of the tokens to prefill after each chunk."""
        keep = min(self._agreement(seq), len(seq) - 1)
        if keep < len(self.tokens):
            self.rewind(keep)
        yield from self.prefill_chunks(seq[len(self.tokens) : max(len(seq) - leave, len(self.tokens))])
        self._prefix_of = seq

    @property
    def in_round(self) -> bool:
        """Whether a round is open (begin() was called and neither commit nor abort yet)."""
        return self._txn is not None

    def begin(self) -> None:
        """Open a round: everything fed until commit can be rolled back."""
        self._txn = Transaction(self.caches)
        self._fed = []

    def commit(self, seq: list[int]) -> int:
        """Close the round keeping what agrees with seq (all but its last token); returns tokens kept."""
        fed = [t for arr in self._fed for t in token_ids(arr)]
        held = self.tokens
        agree = self._agreement(seq)
        if agree == len(held):  # the held tokens begin seq: only this round's need comparing
            agree += common_prefix_len(fed, seq[agree : agree + len(fed)])
        keep = max(min(agree, len(seq) - 1) - len(held), 0)
        self._close(keep)
        held.extend(fed[:keep])
        return keep

    def commit_keep(self, keep: int) -> int:
        """Close the round keeping the first `keep` tokens fed in it; no sync: the tokens stay lazy."""
        if keep:
            fed = self._fed[0] if len(self._fed) == 1 else mx.concatenate(self._fed)
            self._lazy.append(fed[:keep])
            self._prefix_of = None  # kept before the loop appends them to its sequence
        self._close(keep)
        return keep

    def _close(self, keep: int) -> None:
        """Roll the caches back to the first `keep` tokens of the round and end it."""
        assert self._txn is not None, "no round is open: begin() opens one"
        self._txn.commit(keep, self.linear_layers)
        self._txn, self._fed = None, []

    def abort(self) -> None:
        """Roll back an open round entirely (nothing fed in it is kept)."""
        if self._txn is not None:
            self.commit_keep(0)

    def rewind(self, n: int) -> None:
        """Drop everything after the first n tokens, exactly."""
        if all(isinstance(c, TRIMMABLE) for c in self.caches):
            for c in self.caches:
                cast(TrimmableCache, c).trim(len(self.tokens) - n)
            self.tokens = self.tokens[:n]
            self._checkpoints = [(m, s) for m, s in self._checkpoints if m <= n]
            return
        tokens = self.tokens[:n]
        self._restore_checkpoint(n)
        self.prefill(tokens[len(self.tokens) :])

    def _checkpoint(self) -> None:
        if not self.hybrid:
            return
        states: Checkpoint = [arrays_cache_state(c) if isinstance(c, ArraysCache) else _offset(c) for c in self.caches]
        self._checkpoints = (self._checkpoints + [(len(self.tokens), states)])[-MAX_CHECKPOINTS:]

    def _restore_checkpoint(self, n: int) -> None:
        usable = [(m, s) for m, s in self._checkpoints if m <= n and self._kv_trimmable()]
        if not usable:
            self.reset()
            return
        m, states = usable[-1]
        for c, s in zip(self.caches, states):
            if isinstance(s, list):  # an ArraysCache's states (see _checkpoint)
                set_arrays_cache_state(c, s)
            else:
                trimmable = cast(TrimmableCache, c)  # a hybrid model's other caches count positions
                trimmable.trim(trimmable.offset - s)
        self.tokens = self.tokens[:m]
        self._checkpoints = [(k, s) for k, s in self._checkpoints if k <= m]

    def _kv_trimmable(self) -> bool:
        return all(isinstance(c, (ArraysCache, *TRIMMABLE)) for c in self.caches)


def _offset(cache: Cache) -> int:
    """The positions a hybrid model's attention cache holds (its caches other than ArraysCache count them)."""
    return cast(TrimmableCache, cache).offset
