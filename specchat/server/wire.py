"""Engine events as JSON and back: the stream `/specchat/v1/generate` sends and a remote engine reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields
from typing import TYPE_CHECKING, Any, TypeVar

from specchat.engine.errors import ErrorKind
from specchat.engine.events import (
    Event,
    Failed,
    Finished,
    GenerationStats,
    PrefillProgress,
    Rejection,
    RoundResult,
    TextChunk,
)
from specchat.engine.json_types import JSONObject, JSONValue, as_list
from specchat.engine.logprobs import TokenLogprob

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")

ENGINE_EVENTS = (TextChunk, RoundResult, PrefillProgress, Finished, Failed)
EVENT_TYPES: dict[str, type[Event]] = {cls.__name__: cls for cls in ENGINE_EVENTS}


def event_to_json(event: Event) -> JSONObject:
    """{"type": "TextChunk", ...its fields} for one engine event."""
    body = asdict(event)
    body["type"] = type(event).__name__
    return body


def event_from_json(body: JSONObject) -> Event:
    """The engine event a dict from event_to_json describes; ValueError for an unknown type."""
    name = body.get("type")
    cls = EVENT_TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"unknown event type {name!r}")
    # the event's fields by name, as the stream carries them: what each holds is the class's to know
    values: dict[str, Any] = {f.name: body[f.name] for f in fields(cls) if f.name in body}
    for key, value in values.items():
        if isinstance(value, list):
            values[key] = tuple(value)
    if cls is Finished:
        values["stats"] = _known(GenerationStats, values.get("stats") or {})
    if cls is RoundResult and values.get("rejection"):
        values["rejection"] = Rejection(**values["rejection"])
    if cls is Failed:
        values["kind"] = _error_kind(body.get("kind"))
    if cls is TextChunk:
        values["logprobs"] = tuple(_token_logprob(item) for item in values.get("logprobs", ()))
    return cls(**values)


def _token_logprob(body: Mapping[str, JSONValue]) -> TokenLogprob:
    """A TokenLogprob from its asdict() form ({"token", "logprob", "top": [[id, logprob], ...]})."""
    pairs = [as_list(pair) for pair in as_list(body.get("top"))]
    top = tuple((int(_number(token)), _number(logprob)) for token, logprob in pairs)
    return TokenLogprob(int(_number(body["token"])), _number(body["logprob"]), top)


def _number(value: JSONValue) -> float:
    """A number of the stream's JSON; ValueError for anything else (the stream is not SpecChat's)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise ValueError(f"not a number: {value!r}")


def _error_kind(value: object) -> ErrorKind:
    """The kind a stream's Failed event names; ENGINE for one this version does not know."""
    if not isinstance(value, str):
        return ErrorKind.ENGINE
    try:
        return ErrorKind(value)
    except ValueError:
        return ErrorKind.ENGINE


def _known(cls: type[T], values: Mapping[str, JSONValue]) -> T:
    """cls built from the fields it knows (a newer server may send more)."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})
