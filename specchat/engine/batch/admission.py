"""Which engines and configs can decode in a batch, and why the others run alone."""

from __future__ import annotations

from typing import Any

from ..config import GenerationConfig
from ..engine import Engine
from ..errors import EngineError
from .row_cache import row_caches

BATCH_MODES = ("baseline", "draft", "lookup")


def batch_refusal(engine: Any, cfg: GenerationConfig) -> str | None:
    """Why this engine and config cannot decode in a batch; None when they can."""
    if not isinstance(engine, Engine):
        return "this engine runs one request at a time"
    if cfg.mode not in BATCH_MODES:
        return f"mode {cfg.mode!r} runs one request at a time"
    if engine.available_modes().get(cfg.mode):
        return engine.available_modes()[cfg.mode]  # the solo path says it the usual way
    return _cache_refusal(engine)


def _cache_refusal(engine: Engine) -> str | None:
    models = [engine.target] + ([engine.draft] if engine.draft is not None else [])
    for loaded in models:
        try:
            row_caches(engine.runner.caches if loaded is engine.target else _draft_caches(engine))
        except EngineError as exc:
            return str(exc)
    return None


def _draft_caches(engine: Engine) -> list[Any]:
    runner = getattr(engine.drafters.get("draft"), "runner", None)
    return list(runner.caches) if runner is not None else []
