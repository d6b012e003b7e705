"""A/B: one prompt under Off / Draft / MTP / prompt lookup / DFlash, with speed, acceptance and whether the outputs
match (no Qt)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specchat.engine.config import DFLASH_MAX_DRAFT_TOKENS, MTP_MAX_DEPTH, GenerationConfig
from specchat.engine.modes import SpecMode
from specchat.engine.runner import common_prefix_len

from .engine_like import TuningEngine

if TYPE_CHECKING:
    from specchat.engine.engine import GenerationResult

AB_MODES: tuple[str, ...] = (SpecMode.BASELINE, SpecMode.DRAFT, SpecMode.MTP, SpecMode.LOOKUP, SpecMode.DFLASH)
MODE_TITLES = {
    "baseline": "Off",
    "draft": "Draft model",
    "mtp": "MTP head",
    "lookup": "Prompt lookup",
    "dflash": "DFlash",
}
DEEPEST = {SpecMode.MTP: MTP_MAX_DEPTH, SpecMode.DFLASH: DFLASH_MAX_DRAFT_TOKENS}  # the modes that cap K


@dataclass(frozen=True)
class ABRow:
    """One mode's run; unavailable carries the reason when the mode could not run."""

    mode: str
    unavailable: str | None = None
    tokens_per_s: float | None = None
    acceptance_rate: float | None = None
    mean_accepted_per_round: float | None = None
    generated_tokens: int = 0
    identical: bool | None = None  # None: not checked (no baseline, sampling, or unavailable)
    first_mismatch: int | None = None
    text: str = ""

    @property
    def title(self) -> str:
        """Off / Draft model / MTP head / Prompt lookup / DFlash."""
        return MODE_TITLES.get(self.mode, self.mode)


def run_ab(
    engine: TuningEngine,
    prompt_ids: list[int],
    k: int,
    max_tokens: int,
    temperature: float = 0.0,
    cancel: threading.Event | None = None,
    on_row: Callable[[ABRow], None] | None = None,
) -> list[ABRow]:
    """Generate the prompt once per mode from a fresh cache; outputs are compared with Off when greedy."""
    reasons = engine.available_modes()
    rows: list[ABRow] = []
    reference: list[int] | None = None
    for mode in AB_MODES:
        if cancel is not None and cancel.is_set():
            break
        if reasons.get(mode):
            row = ABRow(mode, unavailable=reasons[mode])
        else:
            cfg = GenerationConfig(SpecMode(mode), _draft_tokens(mode, k), max_tokens, temperature)
            engine.reset()  # same work for every mode: prefill from scratch
            result = engine.generate(prompt_ids, cfg, cancel)
            if result.cancelled:
                break
            tokens = list(result.tokens)
            reference = tokens if mode == SpecMode.BASELINE else reference
            row = _row(mode, result, tokens, reference if cfg.greedy else None)
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows


def _draft_tokens(mode: str, k: int) -> int | str:
    """K for a mode: the MTP head drafts at most MTP_MAX_DEPTH (as in the chat), a DFlash block at most
    DFLASH_MAX_DRAFT_TOKENS; baseline ignores K."""
    if mode == SpecMode.BASELINE:
        return GenerationConfig().num_draft_tokens
    return min(k, DEEPEST.get(SpecMode(mode), k))


def _row(mode: str, result: GenerationResult, tokens: list[int], reference: list[int] | None) -> ABRow:
    stats = result.stats
    speculative = mode != SpecMode.BASELINE
    identical = mismatch = None
    if reference is not None and speculative:
        identical = tokens == reference
        mismatch = None if identical else common_prefix_len(tokens, reference)
    elif reference is not None:
        identical = True
    drafted = speculative and stats.drafted > 0  # nothing drafted: no acceptance to report, not 0%
    return ABRow(
        mode,
        None,
        stats.decode_tokens_per_s,
        stats.acceptance_rate if drafted else None,
        stats.mean_accepted_per_round if drafted else None,
        stats.generated_tokens,
        identical,
        mismatch,
        result.text,
    )
