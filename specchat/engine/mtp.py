"""MTP self-speculation: the target's own multi-token-prediction head drafts inside our loop.

mlx-optiq attaches the head (`optiq.runtime.mtp.runtime.attach`): the model gains
`mtp_forward`, `make_mtp_cache` and `return_hidden`. The head's entry for position
j reads the target's final hidden state h_j and the embedding of token j+1, and
predicts token j+2; its one attention layer keeps a KV cache over all positions.

With `history = True`, per round, for a sequence of N tokens (the target holds the first N-1):
- catch up: feed the head the pairs (h_j, t_{j+1}) it has not seen, up to
  j = N-2, in one call; the last one gives the first draft;
- draft steps 2..k feed the head its own hidden state and last draft token;
- roll the head's cache back to the catch-up (our Transaction): draft entries are
  never kept, since they were built from the head's hidden states, not the target's.
The target's hidden states arrive through `ModelRunner.hidden_sink` from every
target pass (prefill and verify); only those of positions the target kept are used.

With `history = False` (the default) the head keeps no cache: each step sees only its own
position, as mlx-optiq's engine drafts (one head position per draft instead of one per new token).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, cast

import mlx.core as mx

from specchat.upstream.mlx_optiq import attach_mtp_head, head_logits, mtp_core

from .drafters import Draft, Drafter, DraftRequest, DraftSteps, TargetTaps
from .errors import ModelLoadError
from .model_types import LanguageModel, MtpModel
from .mtp_detect import MtpSupport, detect_mtp
from .prefill_pace import PREFILL_CHUNK
from .rollback import Transaction
from .runner import ModelRunner, held_agreement
from .sampling import Sampler

if TYPE_CHECKING:
    from .config import GenerationConfig


def attach_head(model: LanguageModel, tokenizer: object, folder: Path, support: MtpSupport | None = None) -> MtpSupport:
    """Attach a folder's MTP head (detected unless `support` is given) with mlx-optiq; raise when impossible."""
    support = support or detect_mtp(folder)
    if not support.available:
        raise ModelLoadError(f"{Path(folder).name} has no usable MTP head: {support.reason}")
    try:
        attach_mtp_head(model, tokenizer, folder)
    except Exception as exc:  # optiq raises RuntimeError / ValueError / KeyError for bad heads
        raise ModelLoadError(
            f"mlx-optiq could not attach the MTP head of {folder}: {type(exc).__name__}: {exc}"
        ) from exc
    return support


class HiddenRows:
    """The target's hidden states by position, for positions the head has not consumed yet."""

    def __init__(self) -> None:
        self._chunks: list[tuple[int, mx.array]] = []

    def put(self, start: int, rows: mx.array) -> None:
        """Rows for positions start.. replace anything at or after start (it was rolled back)."""
        self.truncate(start)
        self._chunks.append((start, rows))

    def truncate(self, end: int) -> None:
        """Forget rows at positions >= end."""
        kept = []
        for start, rows in self._chunks:
            if start < end:
                kept.append((start, rows[: end - start]))
        self._chunks = kept

    def drop_before(self, begin: int) -> None:
        """Forget rows at positions < begin."""
        kept = []
        for start, rows in self._chunks:
            if start + rows.shape[0] > begin:
                cut = max(begin - start, 0)
                kept.append((start + cut, rows[cut:]))
        self._chunks = kept

    def take(self, begin: int, end: int) -> mx.array | None:
        """Rows for positions [begin, end), shape (end - begin, H); None if any is missing."""
        if end <= begin:
            return mx.zeros((0, 0))
        parts, at = [], begin
        for start, rows in self._chunks:
            if start <= at < start + rows.shape[0]:
                part = rows[at - start : end - start]
                parts.append(part)
                at += part.shape[0]
        if at < end:
            return None
        return parts[0] if len(parts) == 1 else mx.concatenate(parts)

    def clear(self) -> None:
        """Forget every row."""
        self._chunks = []


class MtpDrafter(Drafter):
    """Drafts with the target's attached MTP head; its cache is rolled back exactly every round."""

    name = "mtp"

    def __init__(self, target: ModelRunner):
        self.target = target
        self.model = cast(MtpModel, target.model)  # the engine makes an MtpDrafter only once attach_head worked
        self.cache = self.model.make_mtp_cache()
        self.seen: list[int] = []  # the tokens the head's m entries depend on: seq[:m + 1]
        self._seen_of: list[int] | None = None  # a sequence `seen` is known to begin (held_agreement)
        self.rows = HiddenRows()
        # True: the head attends over the whole sequence through its KV cache, as it was trained.
        # False: each head step sees only its own position, as mlx-optiq drafts: one head position
        # per draft instead of one per generated token plus the drafts (cheaper where compute scales
        # with tokens, e.g. on the CPU), drafts possibly less accurate. Set per generation (begin).
        self.history = False

    @property
    def entries(self) -> int:
        """How many positions the head's cache holds."""
        return int(self.cache[0].offset)

    def begin(self, cfg: GenerationConfig) -> TargetTaps:
        """A generation begins: take its history setting; the target's passes feed the head their hidden states."""
        self.history = cfg.mtp_history
        return TargetTaps(hidden_sink=self.receive_hidden)

    def receive_hidden(self, position: int, hidden: mx.array) -> None:
        """Hidden states from a target pass (ModelRunner.hidden_sink)."""
        self.rows.put(position, hidden)

    def prefill_steps(self, seq: list[int]) -> Iterator[tuple[int, int]]:
        """Feed the head every prompt position but the last (kept for the first draft), a chunk at a time;
        each chunk is recorded as consumed, so stopping between chunks leaves the head consistent."""
        if not self.history:
            return
        start = self._sync(seq)
        end = len(seq) - 2
        for a in range(start, end, PREFILL_CHUNK):
            b = min(a + PREFILL_CHUNK, end)
            self._feed(self._rows(a, b), seq[a + 1 : b + 1])
            mx.eval([c.state for c in self.cache])
            self._consumed(seq, b)
            yield b - start, end - start
        self._consumed(seq, max(start, end))

    def unseen(self, seq: list[int]) -> int:
        """Nothing the loop bills: the head catches up inside its proposal, from the target's hidden states."""
        return 0

    def propose(self, request: DraftRequest) -> Draft:
        """Catch up on the kept positions, then draft up to k tokens (fewer where the plan stops early, only
        what the constraint allows); the head keeps only the catch-up."""
        seq, k, sampler = request.seq, request.k, request.sampler
        if len(seq) < 2:  # no target hidden state yet: propose the last token, honestly (the loop cuts it)
            return self._repeat_last(seq, k, sampler)
        if not self.history:
            return self._propose_without_history(request)
        start = self._sync(seq)
        end = len(seq) - 1
        txn = Transaction(self.cache)
        with txn.feeding(end - start):
            logits, hidden = self._catch_up(self._rows(start, end), seq[start + 1 :])
        steps = DraftSteps.of(request)
        while (token := steps.add(logits[-1])) is not None:
            with txn.feeding(1):
                logits, hidden = self._feed(hidden[-1:], token.reshape(1))
        txn.commit(end - start, {})  # the head's own cache: attention only
        self._consumed(seq, end)
        return steps.draft()

    def _propose_without_history(self, request: DraftRequest) -> Draft:
        """Draft k tokens from the target's last hidden state, every head step seeing only itself."""
        seq = request.seq
        last = len(seq) - 2
        self._ensure_rows(seq, last)
        self.rows.drop_before(last)
        hidden, token = self._rows(last, last + 1), mx.array(seq[-1:], dtype=mx.uint32)
        steps = DraftSteps.of(request)
        while True:
            logits, hidden = self._feed(hidden, token, own_cache=False)
            picked = steps.add(logits[-1])
            if picked is None:
                return steps.draft()
            token = picked.reshape(1)

    def observe(self, seq: list[int]) -> None:
        """The target holds seq[:-1]: forget hidden states of the positions it rolled back."""
        self.rows.truncate(len(seq) - 1)

    def reset(self) -> None:
        """Drop the head's cache and every hidden state."""
        self.cache = self.model.make_mtp_cache()
        self.seen, self._seen_of = [], None
        self.rows.clear()

    def _feed(
        self, hidden: mx.array, tokens: mx.array | list[int], own_cache: bool = True
    ) -> tuple[mx.array, mx.array]:
        """One head call over (T, H) hidden states and T next tokens: logits (T, V), hidden (T, H).
        Without its own cache the call attends only to its own positions."""
        ids = tokens if isinstance(tokens, mx.array) else mx.array(tokens, dtype=mx.uint32)
        logits, out = self.model.mtp_forward(
            hidden[None], ids[None], return_hidden=True, mtp_cache=self.cache if own_cache else None
        )
        return logits[0], out[0]

    def _catch_up(self, hidden: mx.array, tokens: list[int]) -> tuple[mx.array, mx.array]:
        """Like _feed, but projects only the last position to logits: the others only fill the cache,
        and on a real vocabulary (248k x hidden) each projected row costs several head layers."""
        core = mtp_core(self.model)  # mlx-optiq's head without the projection
        if core is None or len(tokens) == 1:
            return self._feed(hidden, tokens)
        ids = mx.array(tokens, dtype=mx.uint32)
        _, out = core(hidden[None], ids[None], mtp_cache=self.cache, emit_logits=False)
        return head_logits(self.model, out[:, -1:])[0], out[0]

    def _sync(self, seq: list[int]) -> int:
        """Roll the head back to what agrees with seq; make sure the target's hidden states it needs exist."""
        agree = max(held_agreement(self.seen, seq, self._seen_of) - 1, 0)
        keep = min(self.entries, agree, max(len(seq) - 2, 0))
        if keep < self.entries:
            for c in self.cache:
                c.trim(c.offset - keep)
            self.seen = seq[: keep + 1] if keep else []
        self._seen_of = seq  # seen now begins seq (kept entries agree with it)
        self.rows.drop_before(keep)
        self._ensure_rows(seq, keep)
        return keep

    def _ensure_rows(self, seq: list[int], begin: int) -> None:
        """Make sure the target's hidden states of positions begin..len(seq)-2 are at hand."""
        self.rows.truncate(len(seq) - 1)
        if self.rows.take(begin, len(seq) - 1) is None:
            # The target kept these positions from an earlier call and never re-ran them:
            # replay them (exact: the target's rollback is exact) to get their hidden states.
            self.target.rewind(min(begin, len(self.target.tokens)))
            self.target.prepare(seq)
            self._rows(begin, len(seq) - 1)  # raises when the replay did not bring them either

    def _rows(self, begin: int, end: int) -> mx.array:
        """The target's hidden states of positions [begin, end); ModelLoadError when they never came."""
        rows = self.rows.take(begin, end)
        if rows is None:
            raise ModelLoadError(
                "the target's hidden states did not reach the MTP head; "
                "is ModelRunner.hidden_sink set to MtpDrafter.receive_hidden?"
            )
        return rows

    def _consumed(self, seq: list[int], entries: int) -> None:
        """After _sync(seq), the head's cache holds `entries` positions of seq: add the tokens they depend on."""
        self.seen.extend(seq[len(self.seen) : entries + 1 if entries else 0])
        self.rows.drop_before(entries)

    def _repeat_last(self, seq: list[int], k: int, sampler: Sampler) -> Draft:
        """A draft for a one-token sequence (no hidden state yet): its token, k times, drawn from a point mass."""
        tokens = mx.array([seq[-1]] * k, dtype=mx.uint32)
        if sampler.greedy:
            return Draft(tokens, None)
        embed = self.model.model.embed_tokens
        vocab = getattr(embed, "num_embeddings", None) or embed.weight.shape[0]
        return Draft(tokens, mx.broadcast_to(mx.arange(vocab) == seq[-1], (k, vocab)).astype(mx.float32))
