"""Engine events as JSON and back: the stream `/specchat/v1/generate` sends and a remote engine reads."""

from __future__ import annotations

from dataclasses import asdict, fields

from specchat.engine.errors import ErrorKind
from specchat.engine.events import (Failed, Finished, GenerationStats, PrefillProgress, Rejection, RoundResult,
                               TextChunk)

EVENT_TYPES = {cls.__name__: cls for cls in (TextChunk, RoundResult, PrefillProgress, Finished, Failed)}


def event_to_json(event) -> dict:
    """{"type": "TextChunk", ...its fields} for one engine event."""
    body = asdict(event)
    body["type"] = type(event).__name__
    return body


def event_from_json(body: dict):
    """The engine event a dict from event_to_json describes; ValueError for an unknown type."""
    cls = EVENT_TYPES.get(body.get("type"))
    if cls is None:
        raise ValueError(f"unknown event type {body.get('type')!r}")
    values = {f.name: body[f.name] for f in fields(cls) if f.name in body}
    for name, value in values.items():
        if isinstance(value, list):
            values[name] = tuple(value)
    if cls is Finished:
        values["stats"] = _known(GenerationStats, values.get("stats") or {})
    if cls is RoundResult and values.get("rejection"):
        values["rejection"] = Rejection(**values["rejection"])
    if cls is Failed:
        values["kind"] = _error_kind(body.get("kind"))
    return cls(**values)


def _error_kind(value: object) -> ErrorKind:
    """The kind a stream's Failed event names; ENGINE for one this version does not know."""
    try:
        return ErrorKind(value)
    except ValueError:
        return ErrorKind.ENGINE


def _known(cls, values: dict):
    """cls built from the fields it knows (a newer server may send more)."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})
