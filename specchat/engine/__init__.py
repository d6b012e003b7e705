"""The headless engine: MLX only, never Qt."""

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
