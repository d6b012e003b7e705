"""Every row's drafts for one batched round: draft-model rows in one draft-model run, MTP rows in one
run of the target's head, lookup rows from their own text, DFlash rows from one block pass each (each row
has its own context cache, fed the target's layers as the batch's verify pass captures them: batch_round.py).

The MTP head drafts as the solo loop does by default (`MtpDrafter.history = False`): each head step
reads only its own position, the target's final hidden state before the row's last token and that
token, so the rows' head steps are one call with no cache to roll back. A row whose hidden state is not
at hand yet (its prompt was all in a finished row's caches) takes no drafts for one round; the verify
pass brings it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import mlx.core as mx

from ..draft_stop import ConfidenceModel, StopCosts
from ..drafters import DraftRequest
from ..lookup import PromptLookupDrafter, match_continuation
from ..model_types import LanguageModel, MtpModel
from ..modes import DraftOutcome, SpecMode
from ..round import LoopContext, Step
from ..runner import token_ids
from .batch_choice import ALONE_MODES
from .batch_model import BatchModel
from .batch_stop import BatchStop

if TYPE_CHECKING:
    from ..dflash import DFlashDrafter


@dataclass
class RowState:
    """What a round needs of one row: its loop context, mode, K this round and its count of tokens so far."""

    ctx: LoopContext
    mode: str  # "draft", "mtp", "lookup", "dflash" or "baseline"
    generated: int = 0
    rounds: int = 0
    k: int = 0  # drafts this round (set by the decoder before each round)
    lookup: PromptLookupDrafter | None = None
    step: Step | None = None  # what the last round emitted for this row
    drafts: list[int] = field(default_factory=list)
    hidden: mx.array | None = None  # MTP rows: the target's final hidden state (H,) before the last token
    auto: bool = False  # its K is the batch's (Auto K): the batch's early stop may cut its drafts
    entry: DraftOutcome = DraftOutcome.FULL  # the outcome before its next round's first draft: "full" or "miss"
    confidences: list[float] = field(default_factory=list)  # the drafter's confidence in each draft this round
    stopped_early: bool = False  # this round's drafting stopped before its K: the drafter was unsure
    dflash: DFlashDrafter | None = None  # DFlash rows: the row's own drafter (its context cache)


@dataclass
class RowDraft:
    """One row's drafts this round, the probabilities they were drawn from, and what the draft model read."""

    tokens_list: list[int]
    probs: mx.array | None = None
    fed: list[int] = field(default_factory=list)  # tokens the draft model was fed this round (draft rows)
    base: int = -1  # how many tokens of the row's sequence the draft model held before the round (-1: not fed)


Stop = tuple[StopCosts, ConfidenceModel]  # what the batch's early stop needs (batch_stop.py)


def mtp_head(model: LanguageModel) -> MtpModel | None:
    """The target model when it carries an MTP head (MTP rows draft with it), else None."""
    return cast(MtpModel, model) if callable(getattr(model, "mtp_forward", None)) else None


def row_drafts(
    draft: BatchModel | None, head: MtpModel | None, rows: list[RowState], width: int, stop: Stop | None = None
) -> list[RowDraft]:
    """Every row's drafts (a row's k is cut to what it got); `head` is the target model when it has an MTP
    head, else None; with `stop`, a run of Auto K rows stops drafting where the drafter is unsure."""
    out = [_own_draft(r, head) for r in rows]
    for mode, run in (("draft", draft), ("mtp", head)):
        drafting = [b for b, r in enumerate(rows) if r.mode == mode and (mode == SpecMode.DRAFT or r.k)]
        if run is None or not drafting or width == 0:
            for b in drafting:
                rows[b].k = 0
            continue
        for b, one in zip(drafting, _model_run(run, [rows[b] for b in drafting], width, stop)):
            out[b] = one
    return out


def model_drafters(rows: list[RowState]) -> int:
    """The rows a round with these Ks runs draft steps for: every draft-model row once any row drafts (each is
    fed in the draft model's run, k = 0 or not, so the draft model keeps up with its sequence), and each MTP
    or DFlash row that drafts (one whose K is 0 stays out of its drafter's run)."""
    if not any(r.k for r in rows):
        return 0
    return sum(r.mode == SpecMode.DRAFT or (r.k > 0 and _alone_drafts(r)) for r in rows)


def _alone_drafts(row: RowState) -> bool:
    """A row drafted for only while its own K is not 0 (batch_choice.ALONE_MODES; an MTP row once its hidden
    state is at hand)."""
    return row.mode in ALONE_MODES and (row.mode != SpecMode.MTP or row.hidden is not None)


def draft_reach(row: RowState, k: int) -> int | None:
    """The most drafts a row can take in a round of K: a lookup row's match on its own text (None: any)."""
    if row.mode != SpecMode.LOOKUP or row.lookup is None:
        return None
    return len(match_continuation(row.ctx.seq, k, row.lookup.ngram_max)[0])


def _own_draft(row: RowState, head: MtpModel | None) -> RowDraft:
    """A lookup row's drafts from its own text, a DFlash row's from its own block pass; a row no drafter serves
    this round drafts nothing (k = 0). Draft-model and MTP rows get theirs from a run over all of them (_model_run)."""
    own = row.lookup if row.mode == SpecMode.LOOKUP else row.dflash if row.mode == SpecMode.DFLASH else None
    if row.k and own is not None:
        d = own.propose(DraftRequest(row.ctx.seq, row.k, row.ctx.sampler))
        made = RowDraft(token_ids(d.tokens), d.probs)
        row.k = len(made.tokens_list)
        return made
    if row.mode not in (SpecMode.DRAFT, SpecMode.MTP) or (
        row.mode == SpecMode.MTP and (row.hidden is None or head is None)
    ):
        row.k = 0
    return RowDraft([])


def _model_run(run: BatchModel | MtpModel, members: list[RowState], width: int, stop: Stop | None) -> list[RowDraft]:
    """One run of the draft model (or the target's MTP head) drafting for every row of that mode."""
    steps = _Steps(members, width, stop)
    made = _draft_model_run(run, members, steps) if isinstance(run, BatchModel) else _mtp_run(run, members, steps)
    for i, r in enumerate(members):
        r.k = min(r.k, steps.kept)  # a row near its budget asked for fewer
        r.confidences, r.stopped_early = steps.confidences(i)[: r.k], steps.stopped_early
    return made


class _Steps:
    """One draft run's steps: up to `width`, fewer where the batch's early stop says so (Auto K rows only)."""

    def __init__(self, rows: list[RowState], width: int, stop: Stop | None):
        self.rows, self.width = rows, width
        use = stop is not None and all(r.auto for r in rows)
        self.stop = BatchStop(stop[0], stop[1], [r.entry for r in rows]) if use and stop is not None else None
        self.tokens: list[mx.array] = []
        self.probs: list[list[mx.array | None]] = []

    def add(self, logits: mx.array) -> mx.array | None:
        """Draft every row's next token from its logits (rows, V); the tokens to feed next, or None: done."""
        tokens, p = _pick_rows(logits, self.rows)
        keep, more = True, True
        if self.stop is not None:
            confidence = mx.max(mx.softmax(logits.astype(mx.float32), axis=-1), axis=-1)
            keep, more = self.stop.take(cast(list[float], confidence.tolist()))
        if keep:
            self.tokens.append(tokens)
            self.probs.append(p)
        return tokens if keep and more and self.kept < self.width else None

    @property
    def kept(self) -> int:
        """Draft steps kept so far: every row of the run has this many drafts."""
        return len(self.tokens)

    @property
    def stopped_early(self) -> bool:
        """The early stop ended the run before its width."""
        return self.stop is not None and self.stop.stopped_early and self.kept < self.width

    def confidences(self, i: int) -> list[float]:
        """The drafter's confidence in each kept draft of the run's row i (none without the early stop)."""
        return [] if self.stop is None else self.stop.confidences[i][: self.kept]

    def token_rows(self) -> list[list[int]]:
        """Every row's kept drafts."""
        if not self.tokens:
            return [[] for _ in self.rows]
        return _token_rows(self.tokens)


def _draft_model_run(draft: BatchModel, rows: list[RowState], steps: _Steps) -> list[RowDraft]:
    """The draft steps for every draft row in one batch: the first feeds what each has not seen."""
    draft.begin()
    unseen = [r.ctx.seq[h:] for r, h in zip(rows, draft.held)]
    logits = draft.forward(unseen)
    last = logits[mx.arange(len(rows)), mx.array([len(u) - 1 for u in unseen])]
    fed = 0  # draft tokens the draft model was fed (each but a run's last, unless the stop dropped it)
    while (tokens := steps.add(last)) is not None:
        last = draft.forward_tokens(tokens[:, None])[:, -1]
        fed += 1
    made = []
    for b, (r, ids) in enumerate(zip(rows, steps.token_rows())):
        base = len(r.ctx.seq) - len(unseen[b])
        made.append(RowDraft(ids, _row_probs(r, steps.probs, b), unseen[b] + ids[:fed], base))
    return made


def _mtp_run(model: MtpModel, rows: list[RowState], steps: _Steps) -> list[RowDraft]:
    """The head steps for every MTP row in one call each, from its hidden state and last token."""
    hidden = mx.stack([cast(mx.array, r.hidden) for r in rows])[:, None]  # (rows, 1, H)
    tokens: mx.array | None = mx.array([r.ctx.seq[-1] for r in rows], dtype=mx.uint32)
    while tokens is not None:
        logits, hidden = model.mtp_forward(hidden, tokens[:, None], return_hidden=True)
        tokens = steps.add(logits[:, -1])
    rows_ids = steps.token_rows()
    return [RowDraft(ids, _row_probs(r, steps.probs, b)) for b, (r, ids) in enumerate(zip(rows, rows_ids))]


def _token_rows(steps: list[mx.array]) -> list[list[int]]:
    drafted = mx.stack(steps, axis=1)  # (rows, width)
    mx.eval(drafted)
    return cast(list[list[int]], drafted.tolist())


def _row_probs(row: RowState, probs: list[list[mx.array | None]], b: int) -> mx.array | None:
    """Row b's draft distributions, one per step (None for a greedy row: verification needs none)."""
    if row.ctx.sampler.greedy:
        return None
    return mx.stack([p for p in (s[b] for s in probs) if p is not None])


def _pick_rows(logits: mx.array, rows: list[RowState]) -> tuple[mx.array, list[mx.array | None]]:
    """One draft token per row (each row's own sampler), and the probabilities each came from."""
    if all(r.ctx.sampler.greedy for r in rows):
        return mx.argmax(logits, axis=-1).astype(mx.uint32), [None] * len(rows)
    picks = [r.ctx.sampler.pick(logits[b]) for b, r in enumerate(rows)]
    return mx.stack([t.reshape(()) for t, _ in picks]), [p for _, p in picks]
