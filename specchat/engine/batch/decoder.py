"""Continuous batching: requests join and leave between rounds, every row speculating on its own.

A newcomer's prompt is read alone, one chunk per step between the running rows' rounds, then
it joins the batch; a row that ends (stop token, budget, cancel) leaves at the end of its round.
Each request gets the same events an Engine.stream gives, ending in one Finished or Failed.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import replace
from functools import partial

from ..config import GenerationConfig
from ..dflash import DFlashDrafter
from ..engine import Engine, step_events
from ..errors import EngineError, error_kind, user_message
from ..events import Event, Failed, Finished
from ..modes import SpecMode, StopReason
from ..plain import forced_step
from ..round import Step
from ..stats import StatsRecorder
from .admission import batch_refusal as batch_refusal  # the decoder module is the batch API (owner/batch_job.py)
from .batch_drafts import Stop, draft_reach, model_drafters, mtp_head
from .batch_k import BatchK, BatchPlan
from .batch_model import BatchModel
from .batch_round import run_round
from .dflash_rows import newcomer_dflash
from .joining import joined_row, moved_lead
from .newcomer_prefill import Reads, batch_peers, batch_saving_per_token, newcomer_prefill, peers_shape
from .prefix_store import PrefixStore, extract_row
from .requests import BatchRequest as BatchRequest
from .requests import Newcomer, Prefilled, Row, Start
from .solo_lead import SoloLead
from .solo_tail import can_go_solo, row_caches, solo_tail

MODELS = ("target", "draft")
UNCUT_MODES = (SpecMode.LOOKUP, SpecMode.DFLASH)  # drafts the batch's early stop cannot cut (batch_stop.py)


class BatchDecoder:
    """The active requests of one engine, decoded together round by round."""

    def __init__(self, engine: Engine, max_batch: int):
        self.engine, self.max_batch = engine, max(1, max_batch)
        self.target = BatchModel(engine.target.model, engine.target.name)
        self.draft = BatchModel(engine.draft.model, engine.draft.name) if engine.draft is not None else None
        self.rows: list[Row] = []
        self.waiting: list[Newcomer] = []
        self.reading: Newcomer | None = None  # the newcomer whose prefill runs now
        self.round_s = 0.0  # the last round's seconds: what a prefill step may take
        # a cluster's ranks step together: nothing a step does may hang on a rank's own clock, so a step reads one
        # chunk and the draft model reads every draft row's prompt (its pace and the solo saving are the rank's)
        self.lockstep = False
        self.lead: SoloLead | None = None  # the first request of an empty batch, on the engine's own loop
        self.solo_lead = True
        self.prefill_chunk: int | None = None  # None: sized from each model's measured pace (runner.py)
        # what outlives the batch, kept on the engine: finished rows' caches for follow-ups, round costs
        carry = engine.batch_carry
        self.stores: dict[str, PrefixStore] = {m: carry.prefixes.setdefault(m, PrefixStore()) for m in MODELS}
        if carry.controller is None:
            carry.controller = BatchK()  # the policy's batch_k_max (policy.py)
        self.controller: BatchK = carry.controller  # costs per batch size

    @property
    def active(self) -> int:
        """Requests joined and not yet ended."""
        return len(self.rows) + len(self.waiting) + (self.lead is not None)

    @property
    def room(self) -> int:
        """How many more requests may join now."""
        return self.max_batch - self.active

    def add(self, request: BatchRequest) -> None:
        """Take a request in: its prompt is read between the next rounds, then it joins them (the first one
        of an empty batch runs on the engine's own loop until another comes)."""
        if self.solo_lead and not self.rows and not self.waiting and self.lead is None:
            self.lead = SoloLead(self.engine, request)
            return
        try:
            budget, grammar = self.engine.admit(request.prompt, request.cfg)  # before any model work
        except EngineError as exc:
            request.emit(Failed(user_message(exc), error_kind(exc)))
            return
        head = request.prompt[:-1]
        dflash, target_start = newcomer_dflash(self.engine, request.cfg.mode, self.stores["target"].start(head))
        stats = StatsRecorder(request.cfg, len(request.prompt), target_start[0])
        draft_start = self.stores["draft"].start(head) if request.cfg.mode == SpecMode.DRAFT else (0, None)
        prefill = self._prefill(head, request.cfg, (target_start, draft_start), budget, dflash)
        unread, draft_unread = len(head) - target_start[0], len(head) - draft_start[0]
        newcomer = Newcomer(request, budget, stats, prefill, grammar=grammar, unread=unread, draft_unread=draft_unread)
        self.waiting.append(newcomer)

    def _prefill(
        self,
        head: list[int],
        cfg: GenerationConfig,
        starts: tuple[Start, Start],
        reply: int,
        dflash: DFlashDrafter | None,
    ) -> Generator[Event, None, Prefilled]:
        """The newcomer's prefill (newcomer_prefill.py) from what the (target, draft) `starts` hold, read a chunk
        at a time by _prefill_step; `dflash`: a DFlash row's drafter."""
        draft = self.draft.model if self.draft is not None else None
        reads = Reads(self.target.model, draft, self.prefill_chunk, priced=not self.lockstep)
        saving = partial(self._batch_saving, cfg)  # asked only where the draft model's read is priced
        return newcomer_prefill(self.engine, reads, head, cfg, starts, reply, saving, dflash)

    def _batch_saving(self, cfg: GenerationConfig) -> float | None:
        """What the batch saves per token of the newcomer being read if it drafts (newcomer_prefill.py)."""
        pooled = self.controller.pooled_rate
        peers = batch_peers(self.rows, [n for n in self.waiting if n is not self.reading], pooled)
        top = min(self.controller.k_max, cfg.max_draft_tokens)
        return batch_saving_per_token(self.controller.costs, peers[: self.max_batch - 1], pooled(cfg.mode), top)

    def _lead_step(self, lead: SoloLead) -> None:
        """The lead's next round on the engine's loop; once another request waits, it moves into the batch."""
        if not self.waiting:
            lead.step()
            if lead.ended:
                self.lead = None
            return
        self.lead = None
        self.waiting.insert(0, moved_lead(self.engine, lead, self._prefill))

    def step(self) -> None:
        """At most one prefill chunk for the first newcomer, then one round for the running rows."""
        try:
            if self.lead is not None:
                self._lead_step(self.lead)
                if self.lead is not None:
                    return
            self._prefill_step()
            self._end_cancelled()
            if self.rows:
                self._round()
            if self.solo_lead and len(self.rows) == 1 and not self.waiting and can_go_solo(self.rows[0]):
                self._go_solo()
        except Exception as exc:  # the batch's own fault: every request hears it once
            self._fail_all(exc)

    def _go_solo(self) -> None:
        """The one row left, with nobody waiting, goes on on the engine's own loop (solo_tail.py)."""
        row = self.rows[0]
        target = row_caches(self.target, 0)
        draft = row_caches(self.draft, 0) if self.draft is not None and row.state.mode == SpecMode.DRAFT else None
        self.target.keep_rows([])
        if draft is not None and self.draft is not None:
            self.draft.keep_rows([])
        self.rows = []
        self.lead = solo_tail(self.engine, row, target, draft)

    def _prefill_step(self) -> None:
        """End the cancelled newcomers, then read prefill chunks, each for the newcomer with the least to read
        (first come on a tie), until they took as long as the last round (one chunk at least): a short prompt
        does not wait for a long one, and newcomers get half the engine's time however dear the rounds are."""
        flags = [n.request.cancel.is_set() for n in self.waiting]  # read once: a cancel may come meanwhile
        cancelled = [n for n, flag in zip(self.waiting, flags) if flag]
        self.waiting = [n for n, flag in zip(self.waiting, flags) if not flag]
        for newcomer in cancelled:
            newcomer.stats.prefill_done()
            newcomer.request.emit(Finished((), "", newcomer.stats.finish(0, StopReason.CANCELLED), True))
        started = time.perf_counter()
        while self.waiting:
            newcomer = self.reading = min(self.waiting, key=lambda n: n.unread)
            try:
                newcomer.request.emit(next(newcomer.prefill))
            except StopIteration as done:
                self.waiting = [n for n in self.waiting if n is not newcomer]
                self._join(newcomer, done.value)
            spent = time.perf_counter() - started
            if self.lockstep or spent >= self.round_s or newcomer.request.cancel.is_set():
                return

    def _join(self, newcomer: Newcomer, prefilled: Prefilled) -> None:
        """The newcomer, its prompt read, becomes a row of the batch."""
        held = len(newcomer.request.prompt) - 1
        self.target.add_row(prefilled.target, held)
        if prefilled.draft is not None and self.draft is not None:
            self.draft.add_row(prefilled.draft, held)
        self.rows.append(joined_row(self.engine, newcomer, prefilled, self.controller))

    def _round(self) -> None:
        self._force()
        if not self.rows:
            return
        stop = self._choose_ks()
        entry = [r.state.entry for r in self.rows]  # each row's outcome before this round (its stop's evidence)
        ran = model_drafters([r.state for r in self.rows])
        timing = run_round(self.target, self.draft, [r.state for r in self.rows], mtp_head(self.target.model), stop)
        width = max(r.state.k for r in self.rows)
        self.round_s = timing.draft_s + timing.verify_s
        self.controller.observe(len(self.rows), width, self.round_s, timing.verify_s, ran)
        ended = []
        for i, row in enumerate(self.rows):
            step = row.state.step
            assert step is not None and step.round is not None
            self.controller.observe_row(row.acceptance, step.round.drafted, step.round.accepted, row.state.mode)
            self.controller.confidence.observe_round(entry[i], row.state.confidences, step.round.accepted)
            row.rows_seen.append(len(self.rows))
            info = replace(step.round, draft_s=timing.draft_s, verify_s=timing.verify_s)
            self._emit_step(row, replace(step, round=info))
            if step.stop is not None:
                self._finish(row, step.stop)
                ended.append(i)
        if ended:
            self._drop(ended)

    def _force(self) -> None:
        """Emit what each structured row's grammar forces next (no model pass: the round feeds them); a row
        whose grammar allows nothing more ends."""
        ended = []
        for i, row in enumerate(self.rows):
            grammar, state = row.state.ctx.grammar, row.state
            while grammar is not None and (step := forced_step(state.ctx, grammar, state.generated)) is not None:
                state.generated += len(step.tokens)
                self._emit_step(row, step)
                if step.stop is not None:
                    self._finish(row, step.stop)
                    ended.append(i)
                    break
        if ended:
            self._drop(ended)

    def _choose_ks(self) -> Stop | None:
        """Every row's K this round (an Auto K row the controller leaves out: 0, a plain step), and the early stop
        for its Auto K rows (None: none)."""
        auto = [r for r in self.rows if r.auto]
        plan = BatchPlan(0, (), None, 0)
        if auto:
            cap = max(r.request.cfg.max_draft_tokens for r in auto)
            rates, hopeful = [r.acceptance.rate for r in auto], [r.acceptance.hopeful for r in auto]
            reach = [draft_reach(r.state, cap) if r.auto else None for r in self.rows]
            shape = peers_shape(batch_peers(self.rows, [], self.controller.pooled_rate), reach)
            plan = self.controller.plan_rows(rates, cap, hopeful, shape)
        drafting = dict(zip(map(id, auto), plan.drafting))
        for row in self.rows:
            cfg, state = row.request.cfg, row.state
            if state.mode == SpecMode.BASELINE or (row.auto and not drafting[id(row)]):
                k = 0
            else:
                planned = plan.priced if state.mode in UNCUT_MODES else plan.k
                k = min(planned, cfg.max_draft_tokens) if row.auto else cfg.max_draft_tokens
            state.k = 0 if state.ctx.grammar is not None else max(min(k, state.ctx.budget - state.generated), 0)
        return plan.stop

    def _emit_step(self, row: Row, step: Step) -> None:
        if row.state.mode == SpecMode.BASELINE:  # plain decoding has no rounds, as alone
            step = replace(step, round=None)
        for event in step_events(step, row.detok, row.tokens, row.stats):
            row.request.emit(event)

    def _finish(self, row: Row, stop: StopReason) -> None:
        for event in row.end_events(self.engine.tokenizer.decode, stop):
            row.request.emit(event)

    def _end_cancelled(self) -> None:
        ended = [i for i, r in enumerate(self.rows) if r.request.cancel.is_set()]
        for i in ended:
            self._finish(self.rows[i], StopReason.CANCELLED)
        if ended:
            self._drop(ended)

    def _drop(self, ended: list[int]) -> None:
        keep = [i for i in range(len(self.rows)) if i not in ended]
        drafting = [i for i, r in enumerate(self.rows) if r.state.mode == SpecMode.DRAFT]
        for i in ended:
            self._store(i, drafting)
        self.target.keep_rows(keep)
        if self.draft is not None:
            self.draft.keep_rows([j for j, i in enumerate(drafting) if i not in ended])
        self.rows = [self.rows[i] for i in keep]

    def _store(self, i: int, drafting: list[int]) -> None:
        """Keep a leaving row's caches for a follow-up (the target's, and the draft model's in draft mode)."""
        seq = self.rows[i].state.ctx.seq
        models = [("target", self.target, i)]
        if self.draft is not None and i in drafting:
            models.append(("draft", self.draft, drafting.index(i)))
        for name, model, row in models:
            # a stop token inside a round leaves accepted drafts after it in the caches: nothing to reuse
            if model.held[row] <= len(seq):
                self.stores[name].put(seq[: model.held[row]], extract_row(model.caches, row))

    def _fail_all(self, exc: Exception) -> None:
        message, kind = user_message(exc), error_kind(exc)
        for row in self.rows:
            row.request.emit(Failed(message, kind, tuple(row.tokens)))
        for newcomer in self.waiting:
            newcomer.request.emit(Failed(message, kind))
        self.rows, self.waiting = [], []
        for store in self.stores.values():
            store.clear()
        self.target = BatchModel(self.engine.target.model, self.engine.target.name)
        if self.draft is not None:
            self.draft = BatchModel(self.draft.model, self.draft.name)
