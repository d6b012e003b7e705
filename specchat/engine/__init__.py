"""The headless engine: MLX only, never Qt."""

from .config import MODES, GenerationConfig
from .engine import Engine, GenerationResult
from .errors import (
    ConfigError,
    EngineError,
    EngineThreadError,
    IncompatibleDraftError,
    ModelLoadError,
    RollbackError,
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

__all__ = [
    "MODES", "GenerationConfig", "Engine", "GenerationResult", "ConfigError", "EngineError", "EngineThreadError",
    "IncompatibleDraftError", "ModelLoadError", "RollbackError", "Failed", "Finished",
    "GenerationStats", "PrefillProgress", "Rejection", "RoundResult", "TextChunk",
]
