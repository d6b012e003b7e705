"""Errors the engine raises, the kind each carries across threads and the wire, and the user-facing rule.

Every message names the file, token or value at fault. An error crosses a boundary (a job's end, an
engine event, the HTTP stream) as its message plus an ErrorKind, and is raised again on the far side
as the class of that kind (`error_from`), so nobody compares class names as strings.
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar


class ErrorKind(StrEnum):
    """What kind of fault ended a job or a generation; its value is what the HTTP stream carries."""

    CONFIG = "config"  # a setting out of range or not fitting the models: the caller's, caches intact
    MODEL_LOAD = "model_load"
    INCOMPATIBLE_DRAFT = "incompatible_draft"
    ROLLBACK = "rollback"
    THREAD = "thread"
    REMOTE = "remote"  # a SpecChat server elsewhere failed or could not be reached
    SHUTDOWN = "shutdown"  # the server (or app) is stopping: the work was cut short, try again later
    ENGINE = "engine"  # any other engine error with a message meant for the user
    INTERNAL = "internal"  # an exception the engine did not expect (a bug): its type is named


class EngineError(Exception):
    """Base class for engine errors shown to the user."""

    kind: ClassVar[ErrorKind] = ErrorKind.ENGINE


class ModelLoadError(EngineError):
    """A model folder could not be loaded (missing files, unknown architecture)."""

    kind = ErrorKind.MODEL_LOAD


class IncompatibleDraftError(EngineError):
    """A draft model cannot serve a target (vocabulary or special tokens differ)."""

    kind = ErrorKind.INCOMPATIBLE_DRAFT


class RollbackError(EngineError):
    """A cache cannot be rolled back exactly."""

    kind = ErrorKind.ROLLBACK


class ConfigError(EngineError):
    """A generation setting is out of range or does not fit the loaded models."""

    kind = ErrorKind.CONFIG


class EngineThreadError(EngineError):
    """The engine was called from a thread that does not own it (MLX arrays belong to their thread)."""

    kind = ErrorKind.THREAD


class RemoteError(EngineError):
    """A SpecChat server could not be reached or answered with an error; the message names it."""

    kind = ErrorKind.REMOTE


_CLASSES: dict[ErrorKind, type[EngineError]] = {
    cls.kind: cls
    for cls in (
        EngineError,
        ModelLoadError,
        IncompatibleDraftError,
        RollbackError,
        ConfigError,
        EngineThreadError,
        RemoteError,
    )
}


def error_kind(exc: BaseException) -> ErrorKind:
    """The kind of an exception: its class's kind for engine errors, INTERNAL for anything else."""
    return exc.kind if isinstance(exc, EngineError) else ErrorKind.INTERNAL


def user_message(exc: BaseException) -> str:
    """The one rule for what the user reads: an engine error's own message; anything else with its type named."""
    return str(exc) if isinstance(exc, EngineError) else f"{type(exc).__name__}: {exc}"


def error_from(kind: ErrorKind | str, message: str) -> EngineError:
    """The exception of that kind with that message (an unknown or internal kind gives an EngineError)."""
    try:
        cls = _CLASSES.get(ErrorKind(kind), EngineError)
    except ValueError:
        cls = EngineError
    return cls(message)
