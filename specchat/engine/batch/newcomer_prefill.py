"""What a newcomer reads before it joins: the target its prompt, then the draft model, where that pays.

A draft-model row pays twice before its first token: the target reads the prompt, then the draft model does.
Where prefill is slow next to decoding (a CPU; a long prompt with a short reply anywhere), the draft model's
read costs more than its drafts can save over the reply: 2,000 tokens into a 0.5B draft cost 18 s on this
project's CI machine, while its rounds save about 0.2 s a token, 13 s over a 64-token reply. Such a row
decodes plainly in the batch (exact either way) and the draft model never reads its prompt. Only Auto K
rows are left plain so: a fixed K asks for that drafter at that K.

What a row's drafts save is priced at the batch it joins (every running and waiting row), from the batch's
measured costs: the batch's best round with the row drafting against its best with the row plain, where the
other waiting draft-model rows, not read yet either, draft or decode plainly with it and share the gain (on a
CPU eight such rows drafting beat eight plain ones by 5%, less than their eight reads cost over a short reply,
though each read alone would tip the batch into drafting). A big batch on a CPU verifies many rows at depth K
near the compute roof, where drafts save little or nothing.
Before that size was measured (plainly and drafting), the largest smaller size that was measured prices it (drafts
save no more in a bigger batch); before any size of two rows was, the solo loop's saving stands in: an upper bound.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, replace

from ..autok import AutoK
from ..config import GenerationConfig
from ..dflash import DFlashDrafter
from ..engine import Engine
from ..events import Event, PrefillProgress
from ..model_types import LanguageModel
from ..modes import SpecMode
from ..prefill_pace import PrefillPace
from .batch_choice import BatchShape, batch_shape, best_choice, plain_below
from .batch_costs import CostTable
from .batch_model import progress_events, solo_prefill
from .requests import Newcomer, Prefilled, Row, Start


@dataclass(frozen=True)
class Reads:
    """The models a newcomer's prompt is read into, the prefill chunk (None: sized from each one's pace), and
    whether an Auto K row's draft-model read is priced (else it is always read)."""

    target: LanguageModel
    draft: LanguageModel | None
    chunk: int | None
    priced: bool = True


@dataclass(frozen=True)
class Peer:
    """Another row of the batch a newcomer joins: its mode, its own K (None: Auto K's), its acceptance, and whether
    it is a waiting Auto K draft-model row whose prompt the draft model has yet to read (its read is priced too)."""

    mode: str
    own_k: int | None
    rate: float
    unread: bool = False

    def plain(self) -> Peer:
        """This row decoding plainly (its draft model's read refused)."""
        return Peer(SpecMode.BASELINE, 0, self.rate)


def batch_peers(rows: list[Row], newcomers: list[Newcomer], pooled: Callable[[str], float]) -> list[Peer]:
    """The running rows and the other waiting newcomers as peers (a newcomer's acceptance: its mode's pooled rate)."""
    peers = [Peer(r.state.mode, None if r.auto else r.request.cfg.max_draft_tokens, r.acceptance.rate) for r in rows]
    for n in newcomers:
        cfg = n.request.cfg
        auto = cfg.auto_k and cfg.mode != SpecMode.BASELINE
        unread = auto and cfg.mode == SpecMode.DRAFT and n.draft_unread > 0  # a moved lead's draft model read it
        peers.append(Peer(cfg.mode, None if auto else cfg.max_draft_tokens, pooled(cfg.mode), unread))
    return peers


def peers_shape(peers: list[Peer], reach: list[int | None] | None = None) -> BatchShape:
    """The shape of a batch of these rows (batch_choice.batch_shape), with each row's reach this round."""
    return batch_shape([p.mode for p in peers], [p.own_k for p in peers], [p.rate for p in peers], reach)


BatchSaving = Callable[[], float | None]  # the batch's saving per token of a drafting newcomer (None: unpriced)


def newcomer_prefill(
    engine: Engine,
    reads: Reads,
    head: list[int],
    cfg: GenerationConfig,
    starts: tuple[Start, Start],
    reply: int,
    batch_saving: BatchSaving | None = None,
    dflash: DFlashDrafter | None = None,
) -> Generator[Event, None, Prefilled]:
    """The target, then the draft model (in draft mode; with Auto K only where its read pays over a reply of up
    to `reply` tokens, priced by batch_saving, else by the solo loop's saving), read `head` (all of the sequence
    but its last token) from what the `starts` caches (target, draft) already hold; in MTP mode the target's
    last hidden state too. A DFlash row's drafter (`dflash`, its cache holding what the target's start holds)
    gets the target's layers as they are read, then puts them in its context cache."""
    target_start, draft_start = starts
    target_pace = engine.runner.pace  # the engine's runners measure the same models: one pace each
    capture = None
    if dflash is not None:
        dflash.begin(cfg)
        capture = dflash.layer_capture
    mtp = cfg.mode == SpecMode.MTP
    read = solo_prefill(reads.target, head, reads.chunk, target_start, mtp, target_pace, capture)
    target, hidden = yield from progress_events(read, "target")
    if dflash is not None:
        for done, total in dflash.prefill_steps([*head, 0]):  # its context: every position but the last token's
            yield PrefillProgress(done, total, "draft")
        return Prefilled(target, None, hidden, dflash)
    if cfg.mode != SpecMode.DRAFT or reads.draft is None:
        return Prefilled(target, None, hidden)
    runner = engine.draft_runner
    pace = runner.pace if runner is not None else None
    if cfg.auto_k and reads.priced:
        batch = batch_saving() if batch_saving is not None else None
        auto = engine.auto_k.get(SpecMode.DRAFT)
        if not draft_prefill_pays(len(head) - draft_start[0], reply, pace, auto, batch):
            return Prefilled(target, None, hidden)
    draft, _ = yield from progress_events(solo_prefill(reads.draft, head, reads.chunk, draft_start, pace=pace), "draft")
    return Prefilled(target, draft, hidden)


def prefill_seconds(pace: PrefillPace | None, tokens: int) -> float | None:
    """Seconds to read `tokens` at the pace's measured seconds per token (None: nothing measured yet)."""
    if pace is None or not pace.samples:
        return None
    read, spent = sum(n for n, _ in pace.samples), sum(s for _, s in pace.samples)
    return tokens * spent / read if read else None


def saving_per_token(auto: AutoK | None) -> float | None:
    """Seconds a token costs less with the draft model's rounds than plainly, from the solo loop's measured
    costs (an upper bound on a batch's, where a verify pass is shared); None before a round was measured."""
    if auto is None or auto.draft_step_s is None or not auto.verify_s:
        return None
    plain = auto.verify_cost(0)  # plain decoding's measured cost per token, else a one-token pass on the verify line
    best = auto.measured_rate() or max(auto.rate(k) for k in range(1, auto.k_max + 1))
    return plain - 1 / best if best > 0 else None


def batch_saving_per_token(costs: CostTable, peers: list[Peer], rate: float, top: int) -> float | None:
    """Seconds the batch's time falls per token of a newcomer's reply when it drafts (acceptance `rate`), from the
    measured costs at that batch size (up to K = top), as this read's share: the batch with the newcomer and every
    unread peer drafting against it with all of them plain, split between their reads. (Priced alone, each
    newcomer would count the whole gain its waiting peers' reads make possible: eight rows that together gain
    less than their reads cost would each read.) Before that size ran both a plain and a drafting round: nothing
    saved (0) where the largest smaller size that did decodes this batch plainly, ahead of drafting by
    policy.smaller_size_margin, else the share at that smaller size, the newcomer with its first peers (a bigger
    batch saves no more); None where no size of two rows or more was measured. Over the newcomer's reply every
    row yields about as many tokens, so the batch makes (rows) tokens per token of it."""
    rows, newcomer = len(peers) + 1, Peer(SpecMode.DRAFT, None, rate)
    size = costs.sizes.get(rows)
    if size is not None and size.measured:
        return _read_share(costs, peers, newcomer, top)
    joined = [*peers, newcomer]
    auto = [p.rate for p in joined if p.own_k is None]
    if plain_below(costs, auto, peers_shape(joined), top):
        return 0.0
    below = costs.measured_below(rows)
    return None if below is None else _read_share(costs, peers[: below - 1], newcomer, top)


def _read_share(costs: CostTable, peers: list[Peer], newcomer: Peer, top: int) -> float | None:
    """A newcomer's read's share of what the batch (it and `peers`, at that size's measured costs) saves per token
    of its reply when it and the unread peers draft rather than decode plainly."""
    rows = len(peers) + 1
    drafting = _best_rate(costs, [*peers, newcomer], top, rows)
    plain = _best_rate(costs, [*(p.plain() if p.unread else p for p in peers), newcomer.plain()], top, rows)
    if drafting is None or plain is None:
        return None
    return rows * (1 / plain - 1 / drafting) / (1 + sum(p.unread for p in peers))


def _best_rate(costs: CostTable, rows: list[Peer], top: int, size: int) -> float | None:
    """The batch's best expected tokens per second, these rows in it, at the costs of a batch of `size` rows."""
    shape = replace(peers_shape(rows), rows=size)
    best = best_choice(costs, [r.rate for r in rows if r.own_k is None], shape, top)
    return best.rate if best is not None else None


def draft_prefill_pays(
    tokens: int, reply: int, pace: PrefillPace | None, auto: AutoK | None, batch: float | None = None
) -> bool:
    """Whether the draft model should read `tokens` for a reply of up to `reply` tokens: what its rounds save
    over the reply against its prefill's cost. The saving is `batch` (per token, in the batch the row joins:
    batch_saving_per_token) where that is priced, else the solo loop's (`auto`)."""
    if tokens <= 0:
        return True
    cost, saving = prefill_seconds(pace, tokens), batch if batch is not None else saving_per_token(auto)
    if cost is None or saving is None or (batch is None and saving <= 0):
        # unmeasured, or the solo loop's rounds saved nothing: that says little of a batch, whose controller
        # decides each round whether the rows draft, so the draft model reads as before
        return True
    return saving * reply > cost
