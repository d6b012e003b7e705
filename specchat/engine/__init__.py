"""The headless engine: MLX only, never Qt.

The names below are imported on first use (PEP 562): `import specchat.engine.modes` (the command line's
choices, the UI's mode names) must not import MLX, mlx-lm and transformers, which take seconds.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING

# Greedy speculation equals plain decoding only where a verify pass over K+1 tokens rounds like a one-token step.
# MLX's CUDA backend multiplies float32 in TF32 by default (a 10-bit mantissa), and on an H200 that moved greedy
# tokens at near ties (docs/benchmarks.md, "On an NVIDIA GPU"). MLX reads this at its first matmul; Metal and the
# CPU have no TF32. A value the user set stands.
os.environ.setdefault("MLX_ENABLE_TF32", "0")

if TYPE_CHECKING:
    from .config import GenerationConfig
    from .engine import Engine, GenerationResult
    from .errors import (
        ConfigError,
        EngineError,
        EngineThreadError,
        ErrorKind,
        IncompatibleDraftError,
        ModelLoadError,
        RemoteError,
        RollbackError,
        error_from,
        user_message,
    )
    from .events import (
        Failed,
        Finished,
        GenerationStats,
        PrefillProgress,
        Rejection,
        RoundResult,
        TextChunk,
    )
    from .modes import MODES, DraftOutcome, SpecMode, StopReason
    from .prompt import chat_prompt_ids, user_prompt_ids

# each public name and the submodule that defines it
_HOMES = {
    "config": ("GenerationConfig",),
    "engine": ("Engine", "GenerationResult"),
    "errors": (
        "ConfigError",
        "EngineError",
        "EngineThreadError",
        "ErrorKind",
        "IncompatibleDraftError",
        "ModelLoadError",
        "RemoteError",
        "RollbackError",
        "error_from",
        "user_message",
    ),
    "events": ("Failed", "Finished", "GenerationStats", "PrefillProgress", "Rejection", "RoundResult", "TextChunk"),
    "modes": ("MODES", "DraftOutcome", "SpecMode", "StopReason"),
    "prompt": ("chat_prompt_ids", "user_prompt_ids"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "MODES",
    "DraftOutcome",
    "SpecMode",
    "StopReason",
    "GenerationConfig",
    "Engine",
    "GenerationResult",
    "ConfigError",
    "EngineError",
    "EngineThreadError",
    "IncompatibleDraftError",
    "ModelLoadError",
    "RollbackError",
    "RemoteError",
    "ErrorKind",
    "error_from",
    "user_message",
    "chat_prompt_ids",
    "user_prompt_ids",
    "Failed",
    "Finished",
    "GenerationStats",
    "PrefillProgress",
    "Rejection",
    "RoundResult",
    "TextChunk",
]


def __getattr__(name: str) -> object:
    """A public name, imported from its submodule the first time it is asked for."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
