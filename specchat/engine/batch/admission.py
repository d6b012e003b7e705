"""Which engines and configs can decode in a batch, and why the others run alone."""

from __future__ import annotations

from ..config import GenerationConfig
from ..engine import Engine
from ..errors import EngineError
from ..modes import SpecMode
from ..owner.hosted import HostedEngine
from .batch_drafts import mtp_head
from .row_cache import row_caches

BATCH_MODES = ("baseline", "draft", "lookup", "mtp", "dflash")


def batch_refusal(engine: HostedEngine, cfg: GenerationConfig) -> str | None:
    """Why this engine and config cannot decode in a batch; None when they can."""
    if not isinstance(engine, Engine):
        return "this engine runs one request at a time"
    if cfg.mode == SpecMode.DFLASH and mtp_head(engine.target.model) is not None:
        return "DFlash drafting on a target with its own MTP head runs one request at a time"
    if cfg.mode not in BATCH_MODES:
        return f"mode {cfg.mode!r} runs one request at a time"
    if cfg.mode == SpecMode.MTP and cfg.mtp_history:
        return "MTP with the head's own history (its KV cache over the sequence) runs one request at a time"
    unavailable = engine.available_modes().get(cfg.mode)
    if unavailable:
        return unavailable  # the solo path says it the usual way
    draft = engine.draft_runner
    for caches in (engine.runner.caches, draft.caches if draft is not None else []):
        try:
            row_caches(caches)
        except EngineError as exc:
            return str(exc)
    return None
