"""JSON as Python holds it after json.loads, and what json.dumps takes: the bodies the server reads and writes,
config.json, the engine's learned knowledge, chat messages and tool definitions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

# Arrays and objects nested in a value are read-only Sequence and Mapping: a list[JSONObject] or a dict[str, str]
# is then a JSONValue too (a list or dict type would not be, being invariant). A tuple is written as an array.
JSONValue: TypeAlias = "str | int | float | bool | None | Sequence[JSONValue] | Mapping[str, JSONValue]"
JSONObject: TypeAlias = "dict[str, JSONValue]"  # an object being built, or read at its top level


def as_object(value: JSONValue) -> JSONObject:
    """The value when it is a JSON object, else an empty one (a missing or null field reads as {})."""
    if isinstance(value, dict):
        return value
    return dict(value) if isinstance(value, Mapping) else {}


def as_list(value: JSONValue) -> list[JSONValue]:
    """The value when it is a JSON array (a list; a tuple is copied), else an empty one."""
    if isinstance(value, list):
        return value
    return list(value) if isinstance(value, tuple) else []


def objects(value: JSONValue) -> list[JSONObject]:
    """The objects of a JSON array (anything else in it is skipped); [] when the value is no array."""
    return [as_object(item) for item in as_list(value) if isinstance(item, Mapping)]


def as_str(value: JSONValue, default: str = "") -> str:
    """The value when it is a string, else the default."""
    return value if isinstance(value, str) else default


def as_int(value: JSONValue, default: int = 0) -> int:
    """The value when it is a number (a bool is not), as an integer (truncated); else the default."""
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def int_list(value: JSONValue) -> list[int]:
    """The integers of a JSON array (token ids); [] when the value is no array."""
    return [int(item) for item in as_list(value) if isinstance(item, int) and not isinstance(item, bool)]
