"""One round for every row of a batch: each drafts its own tokens, one target pass verifies them all.

Row b feeds the target its last token and its k_b drafts (right-padded to the longest) and keeps
its accepted prefix plus one: the target holds every row's sequence but its last token. The draft
model holds a prefix of each draft row's sequence and first feeds what it has not seen (ragged).
A round with K = 0 is one plain decoding step for every row.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import cast

import mlx.core as mx

from ..constraint import mask_logits
from ..events import Rejection, RoundResult
from ..logprobs import PassLogprobs, read_logprobs
from ..lookup import PromptLookupDrafter
from ..runner import common_prefix_len, token_ids
from ..speculative import LoopContext, Step
from ..verify import Verdict, verify_greedy, verify_sampled
from .batch_model import BatchModel


@dataclass
class RowState:
    """What a round needs of one row: its loop context, mode, K this round and its count of tokens so far."""

    ctx: LoopContext
    mode: str  # "draft", "lookup" or "baseline"
    generated: int = 0
    rounds: int = 0
    k: int = 0  # drafts this round (set by the decoder before each round)
    lookup: PromptLookupDrafter | None = None
    step: Step | None = None  # what the last round emitted for this row
    drafts: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class RoundTiming:
    """How long a batched round took: drafting (all rows) and verifying (one pass)."""

    draft_s: float
    verify_s: float


def run_round(target: BatchModel, draft: BatchModel | None, rows: list[RowState]) -> RoundTiming:
    """Draft, verify in one batched pass and keep each row's accepted prefix; sets every row's step."""
    t0 = time.perf_counter()
    width = max(r.k for r in rows)
    drafted = _drafts(draft, rows, width)
    t1 = time.perf_counter()
    unseen = [r.ctx.seq[held:] for r, held in zip(rows, target.held)]  # the last token, and forced ones
    target.begin()
    logits = target.forward([u + d.tokens_list[: r.k] for u, r, d in zip(unseen, rows, drafted)])
    # row b's logits from its last unseen token on: one position per draft, and one after them
    mine = [logits[b, len(u) - 1 : len(u) + r.k] for b, (u, r) in enumerate(zip(unseen, rows))]
    mine = [m if r.ctx.grammar is None else mask_logits(m, r.ctx.grammar.allowed()) for m, r in zip(mine, rows)]
    choices = [mx.argmax(m, axis=-1) if r.ctx.sampler.greedy else None for m, r in zip(mine, rows)]
    lps = [_row_logprobs(r, m, c) for r, m, c in zip(rows, mine, choices)]
    mx.eval([c for c in choices if c is not None], *[a for lp in lps if lp for a in lp.arrays()])
    verdicts = []
    for r, d, m, c in zip(rows, drafted, mine, choices):
        r.drafts = d.tokens_list[: r.k]
        if c is not None:
            verdicts.append(verify_greedy(token_ids(c), r.drafts))
        else:
            assert d.probs is not None or not r.k  # a drafter gives probabilities whenever the row samples
            probs = mx.zeros((0, logits.shape[-1])) if d.probs is None else d.probs[: r.k]
            verdicts.append(verify_sampled(m, r.drafts, probs, r.ctx.sampler))
    for r, v, lp in zip(rows, verdicts, lps):
        _emit(r, v, lp)
    target.commit([len(u) + v.accepted for u, v in zip(unseen, verdicts)])
    if draft is not None and any(d.base >= 0 for d in drafted):
        _commit_draft(draft, rows, drafted)
    return RoundTiming(t1 - t0, time.perf_counter() - t1)


@dataclass
class _RowDraft:
    tokens_list: list[int]
    probs: mx.array | None = None
    fed: list[int] = field(default_factory=list)  # tokens the draft model was fed this round (draft rows)
    base: int = -1  # how many tokens of the row's sequence the draft model held before the round (-1: not fed)


def _drafts(draft: BatchModel | None, rows: list[RowState], width: int) -> list[_RowDraft]:
    """Every row's drafts: the draft rows from one batched draft model run, lookup rows from their own text."""
    out = [_RowDraft([]) for _ in rows]
    for b, r in enumerate(rows):
        if r.mode == "lookup" and r.k and r.lookup is not None:
            d = r.lookup.propose(r.ctx.seq, r.k, r.ctx.sampler)
            out[b] = _RowDraft(token_ids(d.tokens), d.probs)
            r.k = len(out[b].tokens_list)
        elif r.mode != "draft":
            r.k = 0
    drafting = [b for b, r in enumerate(rows) if r.mode == "draft"]
    if draft is None or not drafting or width == 0:
        for b in drafting:
            rows[b].k = 0
        return out
    for b, made in zip(drafting, _draft_model_run(draft, [rows[b] for b in drafting], width)):
        out[b] = made
    return out


def _draft_model_run(draft: BatchModel, rows: list[RowState], width: int) -> list[_RowDraft]:
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
    drafted = mx.stack(steps, axis=1)  # (rows, width)
    mx.eval(drafted)
    made = []
    rows_ids = cast(list[list[int]], drafted.tolist())
    for b, (r, ids) in enumerate(zip(rows, rows_ids)):
        row_probs = None if r.ctx.sampler.greedy else mx.stack([p for p in (s[b] for s in probs) if p is not None])
        base = len(r.ctx.seq) - len(unseen[b])
        made.append(_RowDraft(ids, row_probs, unseen[b] + ids[: width - 1], base))
    return made


def _pick_rows(logits: mx.array, rows: list[RowState]) -> tuple[mx.array, list[mx.array | None]]:
    """One draft token per row (each row's own sampler), and the probabilities each came from."""
    if all(r.ctx.sampler.greedy for r in rows):
        return mx.argmax(logits, axis=-1).astype(mx.uint32), [None] * len(rows)
    picks = [r.ctx.sampler.pick(logits[b]) for b, r in enumerate(rows)]
    return mx.stack([t.reshape(()) for t, _ in picks]), [p for _, p in picks]


def _row_logprobs(row: RowState, logits: mx.array, choices: mx.array | None) -> PassLogprobs | None:
    lp = row.ctx.pass_logprobs(logits)
    if lp is not None and choices is not None:
        lp.choose(choices)
    return lp


def _emit(row: RowState, verdict: Verdict, lp: PassLogprobs | None) -> None:
    """Append the row's kept tokens to its sequence (up to a stop) and set its step."""
    emitted, stop = row.ctx.take(verdict.tokens, row.generated)
    if row.ctx.grammar is not None:
        row.ctx.grammar.consume(emitted)
        stop = stop or ("eos" if row.ctx.grammar.finished else None)
    rejection = None
    if verdict.target_choice is not None:
        n = verdict.accepted
        rejection = Rejection(row.generated + n, row.drafts[n] if n < len(row.drafts) else -1, verdict.target_choice)
    info = RoundResult(row.rounds, row.k, row.k, verdict.accepted, len(emitted), 0.0, 0.0, rejection)
    flags = [i < verdict.accepted for i in range(len(emitted))]
    row.generated += len(emitted)
    row.rounds += 1
    if stop is None and row.ctx.cancel.is_set():
        stop = "cancelled"
    row.step = Step(emitted, flags, info, stop, read_logprobs(lp, emitted))


def _commit_draft(draft: BatchModel, rows: list[RowState], drafted: list[_RowDraft]) -> None:
    """Each draft row keeps what it was fed that agrees with its new sequence (never its last token)."""
    keep = []
    for r, d in zip(rows, drafted):
        if r.mode == "draft":
            agree = common_prefix_len(d.fed, r.ctx.seq[d.base :])
            keep.append(min(agree, len(r.ctx.seq) - 1 - d.base))
    draft.commit(keep)
