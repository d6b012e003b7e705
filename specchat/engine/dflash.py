"""DFlash drafting: a block-diffusion drafter proposes a block of tokens in one forward pass from the target's
own hidden states (arXiv 2602.06036; the network is in dflash_model.py, loading in dflash_load.py).

Per round, for a sequence of N tokens (the target holds the first N - 1, at positions 0..N-2):
- catch up: the captured layer outputs of the positions the context cache lacks go through fc and
  hidden_norm into every layer's context KV cache (it then holds positions 0..N-2);
- one drafter pass over [seq[-1]] + (B - 1) mask tokens at positions N-1..N+B-2, embedded with the
  target's table; rows 1..K (K = min(request.k, B - 1)) through the target's head give the K drafts
  (greedy argmax, or sampled with the request's sampler and its probabilities kept);
- the target verifies them in one pass (the loop does that) while the same layers are captured
  (ModelRunner.layer_capture); the kept positions' rows become the next round's context, the others
  are dropped in observe().
The context cache only ever holds positions the target kept, so it needs no transaction: a sequence that
no longer agrees with it is trimmed back to where they agree.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import mlx.core as mx

from specchat.upstream.hidden_capture import embed_tokens, project_logits

from .dflash_load import DFlashWeights
from .drafters import Draft, Drafter, DraftRequest, DraftSteps, TargetTaps
from .errors import ModelLoadError
from .mtp import HiddenRows
from .prefill_pace import PREFILL_CHUNK
from .runner import LayerCapture, ModelRunner, held_agreement

if TYPE_CHECKING:
    from .config import GenerationConfig


class DFlashDrafter(Drafter):
    """Drafts a block per round with a DFlash network reading the target's captured layers."""

    name = "dflash"
    one_pass_draft = True  # any K is one pass of the block: Auto K bills it flat in K

    def __init__(self, target: ModelRunner, weights: DFlashWeights):
        self.target = target
        self.weights = weights
        self.model = weights.model
        self.config = weights.config
        self.block_size = self.config.block_size
        self.cache = self.model.make_cache()
        self.seen: list[int] = []  # the tokens whose context rows the cache holds, in order
        self._seen_of: list[int] | None = None  # a sequence `seen` is known to begin (held_agreement)
        self.rows = HiddenRows()  # captured target rows by position, not yet in the cache
        # ModelRunner.layer_capture while a generation drafts with DFlash (begin).
        self.layer_capture = LayerCapture(tuple(self.config.target_layer_ids), self.receive_layers)

    @property
    def entries(self) -> int:
        """How many context positions the cache holds."""
        return int(self.cache[0].offset) if self.cache else 0

    def fresh(self) -> DFlashDrafter:
        """Another drafter of the same network with a context cache of its own (a batch row's)."""
        return DFlashDrafter(self.target, self.weights)

    def hand_over(self) -> DFlashDrafter:
        """A drafter holding this one's context cache, given away: this one starts afresh."""
        moved = self.fresh()
        moved.cache, moved.seen = self.cache, list(self.seen)
        self.reset()
        return moved

    def begin(self, cfg: GenerationConfig) -> TargetTaps:
        """A generation begins: rows captured before it may belong to another sequence (a cancelled prefill,
        a pass of another mode since); forget them, and have the target's passes capture its layers."""
        self.rows.clear()
        return TargetTaps(layer_capture=self.layer_capture)

    def receive_layers(self, position: int, rows: mx.array) -> None:
        """Captured layer outputs (T, n * H) of a target pass starting at `position` (ModelRunner.layer_capture)."""
        self.rows.put(position, rows)

    def prefill_steps(self, seq: list[int]) -> Iterator[tuple[int, int]]:
        """Put the prompt's context rows (all positions but the last) into the cache, a chunk at a time;
        each chunk is recorded as consumed, so stopping between chunks leaves the drafter consistent."""
        start = self._sync(seq)
        end = len(seq) - 1
        for a in range(start, end, PREFILL_CHUNK):
            b = min(a + PREFILL_CHUNK, end)
            self.model.add_context(self._rows(a, b), self.cache)
            mx.eval([c.state for c in self.cache])
            self._consumed(seq, b)
            yield b - start, end - start

    def unseen(self, seq: list[int]) -> int:
        """Nothing the loop bills: the context catch-up is part of the proposal and costs no target pass."""
        return 0

    def propose(self, request: DraftRequest) -> Draft:
        """Catch the context up to seq[:-1], run one block, draft up to min(k, B - 1) tokens from its rows
        (fewer where the plan stops or the constraint refuses)."""
        seq = request.seq
        k = min(request.k, self.block_size - 1)
        steps = DraftSteps(k, request.sampler, request.plan, request.constraint)
        if k <= 0:
            return self._empty(request)
        start = self._sync(seq)
        end = len(seq) - 1
        if end > start:
            self.model.add_context(self._rows(start, end), self.cache)
        self._consumed(seq, end)
        ids = mx.array([seq[-1]] + [self.config.mask_token_id] * (self.block_size - 1), dtype=mx.uint32)
        hidden = self.model.block(embed_tokens(self.target.model)(ids), self.cache)
        logits = project_logits(self.target.model, hidden[1 : k + 1])
        scorer = self.model.path_scorer(hidden[1 : k + 1], logits)  # DFlash2: a path through candidates
        token: mx.array | int = seq[-1]
        for i in range(k):
            picked = steps.add(logits[i] if scorer is None else scorer.row(i, token))
            if picked is None:
                break
            token = picked
        return steps.draft() if steps.tokens else self._empty(request, steps.steps)

    def observe(self, seq: list[int]) -> None:
        """The target holds seq[:-1]: forget the rows of the positions it rolled back and put the kept ones
        in the context cache now (lazily), so no captured row outlives the round that brought it."""
        end = len(seq) - 1
        self.rows.truncate(end)
        start = self._sync(seq, replay=False)
        rows = self.rows.take(start, end) if end > start else None
        if rows is not None:
            self.model.add_context(rows, self.cache)
            self._consumed(seq, end)

    def reset(self) -> None:
        """Drop the context cache and every captured row."""
        self.cache = self.model.make_cache()
        self.seen, self._seen_of = [], None
        self.rows.clear()

    def _empty(self, request: DraftRequest, steps: int = 0) -> Draft:
        """No drafts (K = 0, or the first row was already refused)."""
        probs = None if request.sampler.greedy else mx.zeros((0, self._vocab()))
        return Draft(mx.zeros((0,), dtype=mx.uint32), probs, steps)

    def _vocab(self) -> int:
        embed = embed_tokens(self.target.model)
        return int(getattr(embed, "num_embeddings", 0) or embed.weight.shape[0])

    def _sync(self, seq: list[int], replay: bool = True) -> int:
        """Trim the cache back to what agrees with seq (at most seq[:-1]); with replay, make sure the rows
        after it exist (the target replays the positions it took in without capturing them)."""
        agree = held_agreement(self.seen, seq, self._seen_of)
        keep = min(self.entries, agree, max(len(seq) - 1, 0))
        if keep < self.entries:
            for c in self.cache:
                c.trim(c.offset - keep)
            del self.seen[keep:]
        self._seen_of = seq  # seen now begins seq
        self.rows.drop_before(keep)
        if replay:
            self._ensure_rows(seq, keep)
        return keep

    def _ensure_rows(self, seq: list[int], begin: int) -> None:
        """Make sure the captured rows of positions begin..len(seq)-2 are at hand."""
        end = len(seq) - 1
        self.rows.truncate(end)
        if end > begin and self.rows.take(begin, end) is None:
            # The target took these positions in without capturing them (another mode, an earlier call):
            # replay them (exact: its rollback is exact) with the capture on.
            previous, self.target.layer_capture = self.target.layer_capture, self.layer_capture
            try:
                self.target.rewind(min(begin, len(self.target.tokens)))
                self.target.prepare(seq)
            finally:
                self.target.layer_capture = previous
            self._rows(begin, end)  # raises when the replay did not bring them either

    def _rows(self, begin: int, end: int) -> mx.array:
        """The captured rows of positions [begin, end); ModelLoadError when they never came."""
        rows = self.rows.take(begin, end)
        if rows is None:
            raise ModelLoadError(
                "the target's layer outputs did not reach the DFlash drafter; "
                "is ModelRunner.layer_capture set to DFlashDrafter.layer_capture?"
            )
        return rows

    def _consumed(self, seq: list[int], entries: int) -> None:
        """After _sync(seq), the cache holds `entries` positions of seq."""
        self.seen.extend(seq[len(self.seen) : entries])
        self.rows.drop_before(entries)
