"""What each setting may hold: the choices, the schema version, and one check per setting that returns the
cleaned value or raises SettingsError."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from specchat.engine.config import LIMITS, Limit
from specchat.engine.modes import MODES, SpecMode

SCHEMA_VERSION = 1
AUTO_DRAFT_TOKENS = "auto"  # K chosen each round by the engine
MIN_DRAFT_TOKENS = LIMITS["num_draft_tokens"].low
MAX_DRAFT_TOKENS = LIMITS["num_draft_tokens"].high

THEMES = ("system", "light", "dark")  # follow the system's colour scheme, or force one
# on battery: speculate as on mains, say once that speeds vary, or decode plainly (no draft work)
POWER_POLICIES = ("ignore", "warn", "plain_on_battery")
DASHBOARD_CHARTS = ("throughput", "acceptance", "memory", "power")  # the dashboard's charts, in order


class SettingsError(ValueError):
    """A settings value of the wrong type or out of range."""


def _is_int(value: Any) -> bool:
    # bool is a subclass of int; `true` in JSON must not pass as a number.
    return isinstance(value, int) and not isinstance(value, bool)


def _number(name: str, value: Any) -> float:
    if not (_is_int(value) or isinstance(value, float)):
        raise SettingsError(f"{name} must be a number, got {value!r}")
    if value != value or value in (float("inf"), float("-inf")):
        raise SettingsError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _within(limit: Limit) -> Callable[[str, Any], float | int]:
    """A check for a generation setting: its type, then the range GenerationConfig accepts."""

    def check(name: str, value: Any) -> float | int:
        if limit.integer and not _is_int(value):
            raise SettingsError(f"{name} must be a whole number, got {value!r}")
        number = value if limit.integer else _number(name, value)
        if not limit.accepts(number):
            raise SettingsError(f"{name} must be {limit.allowed()}, got {value!r}")
        return number

    return check


def _optional_within(limit: Limit) -> Callable[[str, Any], float | int | None]:
    """A check for a setting that is null (off) or a value inside limit."""
    check = _within(limit)

    def optional(name: str, value: Any) -> float | int | None:
        if value is None:
            return None
        try:
            return check(name, value)
        except SettingsError:
            raise SettingsError(f"{name} must be null or {limit.allowed()}, got {value!r}") from None

    return optional


def _boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise SettingsError(f"{name} must be true or false, got {value!r}")
    return value


def _optional_text(name: str, value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise SettingsError(f"{name} must be text or null, got {value!r}")
    return value


def _port(name: str, value: Any) -> int:
    if not _is_int(value) or not 1 <= value <= 65535:
        raise SettingsError(f"{name} must be a whole number between 1 and 65535, got {value!r}")
    return value


def _mode(name: str, value: Any) -> SpecMode:
    if value not in MODES:
        raise SettingsError(f"{name} must be one of {', '.join(MODES)}, got {value!r}")
    return SpecMode(value)


def _draft_tokens(name: str, value: Any) -> int | str:
    if value == AUTO_DRAFT_TOKENS:
        return value
    if not _is_int(value) or not LIMITS["num_draft_tokens"].accepts(value):
        raise SettingsError(
            f"{name} must be a whole number between {MIN_DRAFT_TOKENS} and "
            f'{MAX_DRAFT_TOKENS} or "{AUTO_DRAFT_TOKENS}", got {value!r}'
        )
    return value


def _one_of(choices: tuple[str, ...]) -> Callable[[str, Any], str]:
    """A check that the value is one of choices."""

    def check(name: str, value: Any) -> str:
        if value not in choices:
            raise SettingsError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
        return value

    return check


def _chart_list(name: str, value: Any) -> list[str]:
    charts = _text_list(name, value)
    unknown = [c for c in charts if c not in DASHBOARD_CHARTS]
    if unknown:
        raise SettingsError(f"{name} may hold only {', '.join(DASHBOARD_CHARTS)}, got {unknown[0]!r}")
    return charts


def _text_list(name: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SettingsError(f"{name} must be a list of text, got {value!r}")
    return list(value)


def _base64_or_none(name: str, value: Any) -> str | None:
    _optional_text(name, value)
    if value is not None:
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise SettingsError(f"{name} must be base64 text, got {value!r}") from None
    return value


def _text_keyed(name: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise SettingsError(f"{name} must be an object, got {value!r}")
    return dict(value)


def _mcp_servers(name: str, value: Any) -> list[dict[str, Any]]:
    """A list of MCP servers: each a unique name and exactly one of a command or a URL, and always_allow."""
    if not isinstance(value, list):
        raise SettingsError(f"{name} must be a list of servers, got {value!r}")
    servers: list[dict[str, Any]] = []
    for entry in value:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
            raise SettingsError(f"{name}: each server needs a name, got {entry!r}")
        command, url = entry.get("command") or "", entry.get("url") or ""
        if not isinstance(command, str) or not isinstance(url, str) or bool(command.strip()) == bool(url.strip()):
            raise SettingsError(f"{name}: server {entry['name']!r} needs either a command or a URL")
        allowed = _text_list(f"{name}: server {entry['name']!r} always_allow", entry.get("always_allow", []))
        if any(s["name"] == entry["name"] for s in servers):
            raise SettingsError(f"{name}: two servers are named {entry['name']!r}")
        servers.append(
            {"name": entry["name"], "command" if command else "url": command or url, "always_allow": allowed}
        )
    return servers


def check_schema_version(name: str, value: Any) -> int:
    """The settings file's schema version, refused when it is newer than this app understands."""
    if not _is_int(value) or value < 1:
        raise SettingsError(f"{name} must be a positive whole number, got {value!r}")
    if value > SCHEMA_VERSION:
        raise SettingsError(f"{name} {value} is newer than this app understands ({SCHEMA_VERSION})")
    return value


CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "schema_version": check_schema_version,
    "target_path": _optional_text,
    "draft_path": _optional_text,
    "dflash_path": _optional_text,
    "mode": _mode,
    "num_draft_tokens": _draft_tokens,
    "mtp_history": _boolean,
    "temperature": _within(LIMITS["temperature"]),
    "top_p": _within(LIMITS["top_p"]),
    "top_k": _within(LIMITS["top_k"]),
    "min_p": _within(LIMITS["min_p"]),
    "max_tokens": _within(LIMITS["max_tokens"]),
    "context_length": _optional_within(LIMITS["context_length"]),
    "enable_thinking": _boolean,
    "color_draft_tokens": _boolean,
    "extra_model_dirs": _text_list,
    "enter_sends": _boolean,
    "theme": _one_of(THEMES),
    "power_policy": _one_of(POWER_POLICIES),
    "dashboard_charts": _chart_list,
    "data_dir": _optional_text,
    "window_geometry": _base64_or_none,
    "window_state": _base64_or_none,
    "server_port": _port,
    "server_api_key": _optional_text,
    "server_url": _optional_text,
    "sweep_controls": _text_keyed,
    "mcp_servers": _mcp_servers,
}
