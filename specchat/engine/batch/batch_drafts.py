"""Every row's drafts for one batched round: draft-model rows in one draft-model run, MTP rows in one
run of the target's head, lookup rows from their own text.

The MTP head drafts as the solo loop does by default (`MtpDrafter.history = False`): each head step
reads only its own position, the target's final hidden state before the row's last token and that
token, so the rows' head steps are one call with no cache to roll back. A row whose hidden state is not
at hand yet (its prompt was all in a finished row's caches) takes no drafts for one round; the verify
pass brings it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import mlx.core as mx

from ..lookup import PromptLookupDrafter
from ..runner import token_ids
from ..speculative import LoopContext, Step
from .batch_model import BatchModel


@dataclass
class RowState:
    """What a round needs of one row: its loop context, mode, K this round and its count of tokens so far."""

    ctx: LoopContext
    mode: str  # "draft", "mtp", "lookup" or "baseline"
    generated: int = 0
    rounds: int = 0
    k: int = 0  # drafts this round (set by the decoder before each round)
    lookup: PromptLookupDrafter | None = None
    step: Step | None = None  # what the last round emitted for this row
    drafts: list[int] = field(default_factory=list)
    hidden: mx.array | None = None  # MTP rows: the target's final hidden state (H,) before the last token


@dataclass
class RowDraft:
    """One row's drafts this round, the probabilities they were drawn from, and what the draft model read."""

    tokens_list: list[int]
    probs: mx.array | None = None
    fed: list[int] = field(default_factory=list)  # tokens the draft model was fed this round (draft rows)
    base: int = -1  # how many tokens of the row's sequence the draft model held before the round (-1: not fed)


def row_drafts(draft: BatchModel | None, head: Any, rows: list[RowState], width: int) -> list[RowDraft]:
    """Every row's drafts (a row's k is cut to what it got); `head` is the target model when it has an MTP
    head, else None."""
    out = [RowDraft([]) for _ in rows]
    for b, r in enumerate(rows):
        if r.mode == "lookup" and r.k and r.lookup is not None:
            d = r.lookup.propose(r.ctx.seq, r.k, r.ctx.sampler)
            out[b] = RowDraft(token_ids(d.tokens), d.probs)
            r.k = len(out[b].tokens_list)
        elif r.mode not in ("draft", "mtp") or (r.mode == "mtp" and (r.hidden is None or head is None)):
            r.k = 0
    for mode, run in (("draft", draft), ("mtp", head)):
        drafting = [b for b, r in enumerate(rows) if r.mode == mode and (mode == "draft" or r.k)]
        if run is None or not drafting or width == 0:
            for b in drafting:
                rows[b].k = 0
            continue
        made = _draft_model_run if mode == "draft" else _mtp_run
        for b, one in zip(drafting, made(run, [rows[b] for b in drafting], width)):
            out[b] = one
    return out


def _draft_model_run(draft: BatchModel, rows: list[RowState], width: int) -> list[RowDraft]:
    """`width` draft steps for every draft row in one batch: the first feeds what each has not seen."""
    draft.begin()
    unseen = [r.ctx.seq[h:] for r, h in zip(rows, draft.held)]
    logits = draft.forward(unseen)
    last = logits[mx.arange(len(rows)), mx.array([len(u) - 1 for u in unseen])]
    steps: list[mx.array] = []
    probs: list[list[mx.array | None]] = []
    for step in range(width):
        tokens, p = _pick_rows(last, rows)
        steps.append(tokens)
        probs.append(p)
        if step + 1 < width:
            last = draft.forward_tokens(tokens[:, None])[:, -1]
    made = []
    for b, (r, ids) in enumerate(zip(rows, _token_rows(steps))):
        base = len(r.ctx.seq) - len(unseen[b])
        made.append(RowDraft(ids, _row_probs(r, probs, b), unseen[b] + ids[: width - 1], base))
    return made


def _mtp_run(model: Any, rows: list[RowState], width: int) -> list[RowDraft]:
    """`width` head steps for every MTP row in one call each, from its hidden state and last token."""
    hidden = mx.stack([cast(mx.array, r.hidden) for r in rows])[:, None]  # (rows, 1, H)
    tokens = mx.array([[r.ctx.seq[-1]] for r in rows], dtype=mx.uint32)
    steps: list[mx.array] = []
    probs: list[list[mx.array | None]] = []
    for _ in range(width):
        logits, hidden = model.mtp_forward(hidden, tokens, return_hidden=True)
        picked, p = _pick_rows(logits[:, -1], rows)
        steps.append(picked)
        probs.append(p)
        tokens = picked[:, None]
    return [RowDraft(ids, _row_probs(r, probs, b)) for b, (r, ids) in enumerate(zip(rows, _token_rows(steps)))]


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
