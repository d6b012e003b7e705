"""How requests come into the rounds: a newcomer, its prompt read, becomes a row; a lead on the engine's own
loop becomes a newcomer whose prompt is everything so far (read only where the moved caches do not hold it)."""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import replace

from ..config import GenerationConfig
from ..dflash import DFlashDrafter
from ..engine import Engine
from ..events import Event
from ..loading import vocab_size
from ..lookup import PromptLookupDrafter
from ..modes import SpecMode
from ..round import LoopContext
from ..sampling import Sampler
from .batch_drafts import RowState
from .batch_k import BatchK, checked_drafts
from .dflash_rows import lead_dflash
from .requests import Newcomer, Prefilled, Row, Start
from .solo_lead import SoloLead

# (prompt head, config, (target, draft) starts, reply budget, DFlash drafter) -> the newcomer's prefill
PrefillFactory = Callable[
    [list[int], GenerationConfig, tuple[Start, Start], int, DFlashDrafter | None], Generator[Event, None, Prefilled]
]


def joined_row(engine: Engine, newcomer: Newcomer, prefilled: Prefilled, controller: BatchK) -> Row:
    """The newcomer as a row of the batch (its caches already added to the batch's models): its round state,
    detokenizer (fed what a lead streamed already) and acceptance record (from a lead's own rounds)."""
    request, cfg = newcomer.request, newcomer.request.cfg
    if not newcomer.emitted:  # a lead that moved in keeps its own prefill time
        newcomer.stats.prefill_done()
    stops = frozenset(engine.tokenizer.eos_token_ids)
    ctx = LoopContext(
        list(request.prompt), Sampler(cfg), newcomer.budget, stops, request.cancel, newcomer.grammar, cfg.logprobs
    )
    mode = cfg.mode if cfg.mode != SpecMode.DRAFT or prefilled.draft is not None else SpecMode.BASELINE
    lookup = PromptLookupDrafter(vocab_size(engine.target)) if mode == SpecMode.LOOKUP else None
    auto = cfg.auto_k and mode != SpecMode.BASELINE
    generated = len(newcomer.emitted)
    state = RowState(ctx, mode, generated, lookup=lookup, hidden=prefilled.hidden, auto=auto, dflash=prefilled.dflash)
    detok = engine.tokenizer.detokenizer
    detok.reset()
    for token in newcomer.emitted:
        detok.add_token(token)
    _ = detok.last_segment
    row = Row(request, state, newcomer.stats, detok, auto, list(newcomer.emitted))
    stats = newcomer.stats
    row.acceptance = controller.new_row(*checked_drafts(stats.accepted, stats.drafted, stats.rounds), mode=mode)
    return row


def moved_lead(engine: Engine, lead: SoloLead, prefill: PrefillFactory) -> Newcomer:
    """The lead, closed between two events, as a newcomer: its caches moved out of the engine's runners, its
    grammar where its reply stands, its prefill only what they do not hold."""
    handed = lead.hand_over()
    request = lead.origin
    budget, grammar = engine.admit(request.prompt, request.cfg)
    reply = budget - len(handed.emitted)
    dflash, target_start = lead_dflash(engine, request.cfg.mode, handed.seq, handed.target)
    reading = prefill(handed.seq[:-1], request.cfg, (target_start, handed.draft), reply, dflash)
    if grammar is not None:
        grammar.consume(handed.emitted)  # the lead's reply so far, forced tokens included
    unread = len(handed.seq) - 1 - target_start[0]
    draft_unread = len(handed.seq) - 1 - handed.draft[0]
    moved = replace(request, prompt=handed.seq)
    return Newcomer(moved, budget, handed.stats, reading, handed.emitted, grammar, unread, draft_unread)
