"""Errors the engine raises; each message names the file, token or value at fault."""


class EngineError(Exception):
    """Base class for engine errors shown to the user."""


class ModelLoadError(EngineError):
    """A model folder could not be loaded (missing files, unknown architecture)."""


class IncompatibleDraftError(EngineError):
    """A draft model cannot serve a target (vocabulary or special tokens differ)."""


class RollbackError(EngineError):
    """A cache cannot be rolled back exactly."""


class ConfigError(EngineError):
    """A generation setting is out of range or does not fit the loaded models."""


class EngineThreadError(EngineError):
    """The engine was called from a thread that does not own it (MLX arrays belong to their thread)."""
