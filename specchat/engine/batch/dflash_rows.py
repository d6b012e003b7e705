"""DFlash rows in a batch: each row drafts with a drafter of its own (the engine's network, a context cache
per row), fed the target's layers as they are read.

A DFlash row's drafter must see the target's layers at every position of its sequence, so a newcomer's prompt
is read whole (a finished row's cached prefix holds no layers); a lead that moves into the batch brings the
engine drafter's context cache with it, where that covers what the target's caches hold.
"""

from __future__ import annotations

from ..dflash import DFlashDrafter
from ..engine import Engine
from ..modes import SpecMode
from .requests import Start

NOTHING_HELD: Start = (0, None)


def engine_dflash(engine: Engine) -> DFlashDrafter | None:
    """The engine's DFlash drafter, None when none is loaded."""
    drafter = engine.drafters.get(SpecMode.DFLASH)
    return drafter if isinstance(drafter, DFlashDrafter) else None


def newcomer_dflash(engine: Engine, mode: str, target_start: Start) -> tuple[DFlashDrafter | None, Start]:
    """A new DFlash row's drafter (None for other modes) and where its target read starts: at the start, so the
    drafter sees every layer (other modes keep target_start)."""
    drafter = engine_dflash(engine) if mode == SpecMode.DFLASH else None
    return (None, target_start) if drafter is None else (drafter.fresh(), NOTHING_HELD)


def lead_dflash(engine: Engine, mode: str, seq: list[int], target_start: Start) -> tuple[DFlashDrafter | None, Start]:
    """A DFlash lead's drafter as it moves into the batch with its sequence `seq`: the engine drafter's context
    cache where it holds what the target's caches hold (the read goes on from there), else a fresh drafter and a
    whole read."""
    drafter = engine_dflash(engine) if mode == SpecMode.DFLASH else None
    if drafter is None:
        return None, target_start
    moved = drafter.hand_over()
    if moved.entries == target_start[0] and moved.seen == seq[: target_start[0]]:
        return moved, target_start
    return drafter.fresh(), NOTHING_HELD
