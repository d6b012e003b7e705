"""One round for every row of a batch: each drafts its own tokens, one target pass verifies them all.

Row b feeds the target its last token and its k_b drafts (right-padded to the longest) and keeps
its accepted prefix plus one: the target holds every row's sequence but its last token. The draft
model holds a prefix of each draft row's sequence and first feeds what it has not seen (ragged).
A round with K = 0 is one plain decoding step for every row.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import mlx.core as mx

from ..constraint import mask_logits
from ..logprobs import PassLogprobs
from ..model_types import MtpModel
from ..modes import DraftOutcome, SpecMode
from ..round import Drafted, accept, round_step
from ..runner import common_prefix_len, token_ids
from ..verify import Verdict, verify_greedy, verify_sampled
from .batch_drafts import RowDraft, RowState, Stop, row_drafts
from .batch_model import BatchModel


@dataclass(frozen=True)
class RoundTiming:
    """How long a batched round took: drafting (all rows) and verifying (one pass)."""

    draft_s: float
    verify_s: float


def run_round(
    target: BatchModel,
    draft: BatchModel | None,
    rows: list[RowState],
    head: MtpModel | None = None,
    stop: Stop | None = None,
) -> RoundTiming:
    """Draft, verify in one batched pass and keep each row's accepted prefix; sets every row's step.
    `head`: the target model when it carries an MTP head (MTP rows draft with it), else None; `stop`: where
    Auto K rows stop drafting early (batch_stop.py), None for no early stop."""
    t0 = time.perf_counter()
    drafted = row_drafts(draft, head, rows, max(r.k for r in rows), stop)
    t1 = time.perf_counter()
    unseen = [r.ctx.seq[held:] for r, held in zip(rows, target.held)]  # the last token, and forced ones
    for r, d in zip(rows, drafted):
        r.drafts = d.tokens_list[: r.k]
    verdicts, lps = _verify(target, rows, unseen, drafted)
    for r, v, lp in zip(rows, verdicts, lps):
        _emit(r, v, lp)
    _keep_hidden(target, rows, unseen, verdicts)
    target.commit([len(u) + v.accepted for u, v in zip(unseen, verdicts)])
    for r in rows:
        if r.dflash is not None:
            r.dflash.observe(r.ctx.seq)  # the kept positions' layers go into its context cache
    if draft is not None and any(d.base >= 0 for d in drafted):
        _commit_draft(draft, rows, drafted)
    return RoundTiming(t1 - t0, time.perf_counter() - t1)


def _verify(
    target: BatchModel, rows: list[RowState], unseen: list[list[int]], drafted: list[RowDraft]
) -> tuple[list[Verdict], list[PassLogprobs | None]]:
    """One target pass over every row's unseen tokens and drafts; each row's verdict and logprobs."""
    target.begin()
    target.want_hidden = any(r.mode == SpecMode.MTP for r in rows)
    readers = [r.dflash for r in rows if r.dflash is not None]
    target.capture = tuple(readers[0].config.target_layer_ids) if readers else ()
    starts = list(target.held)
    logits = target.forward([u + r.drafts for u, r in zip(unseen, rows)])
    _hand_layers(target, rows, unseen, starts)
    # row b's logits from its last unseen token on: one position per draft, and one after them
    mine = [_row_logits(logits[b, len(u) - 1 : len(u) + r.k], r) for b, (u, r) in enumerate(zip(unseen, rows))]
    choices = [mx.argmax(m, axis=-1) if r.ctx.sampler.greedy else None for m, r in zip(mine, rows)]
    lps = [_row_logprobs(r, m, c) for r, m, c in zip(rows, mine, choices)]
    mx.eval([c for c in choices if c is not None], *[a for lp in lps if lp for a in lp.arrays()])
    verdicts = [_verdict(r, d, m, c) for r, d, m, c in zip(rows, drafted, mine, choices)]
    return verdicts, lps


def _hand_layers(target: BatchModel, rows: list[RowState], unseen: list[list[int]], starts: list[int]) -> None:
    """Each DFlash row gets the target's captured layers at the positions it fed (lazily: its drafter keeps
    the ones the round accepts)."""
    for b, (r, u) in enumerate(zip(rows, unseen)):
        if r.dflash is not None and target.layers is not None:
            r.dflash.receive_layers(starts[b], target.layers[b, : len(u) + len(r.drafts)])


def _row_logits(logits: mx.array, row: RowState) -> mx.array:
    """A row's verify logits, masked to what its grammar allows."""
    return logits if row.ctx.grammar is None else mask_logits(logits, row.ctx.grammar.allowed())


def _verdict(row: RowState, drafted: RowDraft, logits: mx.array, choices: mx.array | None) -> Verdict:
    """Which of the row's drafts the target keeps: greedy match, or rejection sampling."""
    if choices is not None:
        return verify_greedy(token_ids(choices), row.drafts)
    assert drafted.probs is not None or not row.k  # a drafter gives probabilities whenever the row samples
    probs = mx.zeros((0, logits.shape[-1])) if drafted.probs is None else drafted.probs[: row.k]
    return verify_sampled(logits, row.drafts, probs, row.ctx.sampler)


def _row_logprobs(row: RowState, logits: mx.array, choices: mx.array | None) -> PassLogprobs | None:
    lp = row.ctx.pass_logprobs(logits)
    if lp is not None and choices is not None:
        lp.choose(choices)
    return lp


def _emit(row: RowState, verdict: Verdict, lp: PassLogprobs | None) -> None:
    """Append the row's kept tokens to its sequence (up to a stop) and set its step."""
    accepted = accept(row.ctx, verdict, row.generated)
    stop_confidence = row.confidences[-1] if row.stopped_early and row.confidences else None
    drafted = Drafted(row.drafts, row.k, row.stopped_early, stop_confidence, tuple(row.confidences))
    if row.k:
        row.entry = DraftOutcome.FULL if verdict.accepted == row.k else DraftOutcome.MISS
    row.step = round_step(row.ctx, row.rounds, drafted, verdict, accepted, row.generated, lp=lp)
    row.generated += len(accepted[0])
    row.rounds += 1


def _keep_hidden(target: BatchModel, rows: list[RowState], unseen: list[list[int]], verdicts: list[Verdict]) -> None:
    """Each MTP row keeps the target's hidden state at its new last token's predecessor: the last accepted
    draft, or the last token it fed when none was accepted (the next round's head steps start there)."""
    if target.hidden is None:
        return
    for b, (r, u, v) in enumerate(zip(rows, unseen, verdicts)):
        if r.mode == SpecMode.MTP:
            r.hidden = target.hidden[b, len(u) - 1 + v.accepted]


def _commit_draft(draft: BatchModel, rows: list[RowState], drafted: list[RowDraft]) -> None:
    """Each draft row keeps what it was fed that agrees with its new sequence (never its last token)."""
    keep = []
    for r, d in zip(rows, drafted):
        if r.mode == SpecMode.DRAFT:
            agree = common_prefix_len(d.fed, r.ctx.seq[d.base :])
            keep.append(min(agree, len(r.ctx.seq) - 1 - d.base))
    draft.commit(keep)
