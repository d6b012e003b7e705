"""User settings: a typed dataclass, validated JSON load with backups, atomic save."""

from __future__ import annotations

import base64
import binascii
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from specchat.engine.config import LIMITS, Limit
from specchat.engine.modes import MODES, SpecMode
from specchat.jsonfile import write_json_atomic
from specchat.paths import AppPaths

SCHEMA_VERSION = 1
AUTO_DRAFT_TOKENS = "auto"  # K chosen each round by the engine
MIN_DRAFT_TOKENS = LIMITS["num_draft_tokens"].low
MAX_DRAFT_TOKENS = LIMITS["num_draft_tokens"].high

THEMES = ("system", "light", "dark")  # follow the system's colour scheme, or force one
# on battery: speculate as on mains, say once that speeds vary, or decode plainly (no draft work)
POWER_POLICIES = ("ignore", "warn", "plain_on_battery")
DASHBOARD_CHARTS = ("throughput", "acceptance", "memory", "power")  # the dashboard's charts, in order


@dataclass
class Settings:
    """Everything the user can set, with the defaults a fresh install starts from."""

    schema_version: int = SCHEMA_VERSION
    target_path: str | None = None
    draft_path: str | None = None
    dflash_path: str | None = None  # the DFlash drafter loaded with the last pair (it belongs to the target)
    mode: SpecMode = SpecMode.BASELINE
    num_draft_tokens: int | Literal["auto"] = 4
    mtp_history: bool = False  # True: the MTP head attends over the conversation (see GenerationConfig)
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    max_tokens: int = 512
    context_length: int | None = None  # a cap on the tokens a chat may hold (None: each model's maximum)
    enable_thinking: bool = False
    color_draft_tokens: bool = True
    extra_model_dirs: list[str] = field(default_factory=list)
    enter_sends: bool = True  # False: Enter is a new line and Shift+Enter sends
    theme: Literal["system", "light", "dark"] = "system"
    power_policy: Literal["ignore", "warn", "plain_on_battery"] = "warn"
    dashboard_charts: list[str] = field(default_factory=lambda: list(DASHBOARD_CHARTS))
    data_dir: str | None = None  # conversations and tuning data elsewhere (takes effect at the next start)
    window_geometry: str | None = None  # Qt saveGeometry() bytes, base64
    window_state: str | None = None  # Qt saveState() bytes (docks and toolbars), base64
    server_port: int = 8080  # Server menu: the port "Serve on localhost" listens on
    server_api_key: str | None = None  # the key clients must send (None: none; required off localhost)
    server_url: str | None = None  # the last server used with "Connect to server…"
    sweep_controls: dict[str, Any] = field(default_factory=dict)  # the Sweep panel's last settings (it checks them)
    # MCP servers the chat's tools come from: {"name", "command" (a command line run over stdio) or "url"
    # (streamable HTTP, or SSE when it ends in /sse), "always_allow": [tool names that run without asking]}
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class LoadedSettings:
    """Settings as loaded, plus a message for the user when the file had to be set aside."""

    settings: Settings
    warning: str | None = None


class SettingsError(ValueError):
    """A settings value of the wrong type or out of range."""


# --- value checks: each returns the cleaned value or raises SettingsError ---


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


def _schema_version(name: str, value: Any) -> int:
    if not _is_int(value) or value < 1:
        raise SettingsError(f"{name} must be a positive whole number, got {value!r}")
    if value > SCHEMA_VERSION:
        raise SettingsError(f"{name} {value} is newer than this app understands ({SCHEMA_VERSION})")
    return value


_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "schema_version": _schema_version,
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
assert set(_CHECKS) == {f.name for f in fields(Settings)}, "every setting needs a check"


def settings_from_dict(data: Any) -> Settings:
    """Build validated Settings from parsed JSON; unknown keys ignored, missing ones defaulted."""
    if not isinstance(data, dict):
        raise SettingsError(f"settings must be a JSON object, got {type(data).__name__}")
    values = {name: check(name, data[name]) for name, check in _CHECKS.items() if name in data}
    return Settings(**values)


def settings_keeping_valid(data: dict[str, Any]) -> tuple[Settings, list[str]]:
    """Settings from the fields that pass their check, and what was wrong with each field that did not."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for name, check in _CHECKS.items():
        if name not in data:
            continue
        try:
            values[name] = check(name, data[name])
        except SettingsError as error:
            problems.append(str(error))
    return Settings(**values), problems


def settings_to_dict(settings: Settings) -> dict[str, Any]:
    """Plain JSON-ready dict of the settings, always stamped with the current schema."""
    data = asdict(settings)
    data["schema_version"] = SCHEMA_VERSION
    return data


# --- load and save ---


def load_settings(paths: AppPaths, *, now: Callable[[], datetime] = datetime.now) -> LoadedSettings:
    """Load settings; a bad file is renamed to a timestamped backup and defaults returned."""
    path = paths.settings_file
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return LoadedSettings(Settings())
    except OSError as error:
        return LoadedSettings(Settings(), f"Could not read {path} ({error}); using defaults.")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return LoadedSettings(Settings(), _set_aside(path, "the file is not UTF-8 text", now()))
    except json.JSONDecodeError as error:
        return LoadedSettings(Settings(), _set_aside(path, f"the file is not valid JSON ({error})", now()))
    if not isinstance(data, dict):
        problem = f"settings must be a JSON object, got {type(data).__name__}"
        return LoadedSettings(Settings(), _set_aside(path, problem, now()))
    if "schema_version" in data:
        try:
            _schema_version("schema_version", data["schema_version"])
        except SettingsError as error:  # a newer app's file: its fields may mean other things now
            return LoadedSettings(Settings(), _set_aside(path, str(error), now()))
    settings, problems = settings_keeping_valid(data)
    if not problems:
        return LoadedSettings(settings)
    return LoadedSettings(settings, _keep_valid_fields(paths, settings, problems, now()))


def _keep_valid_fields(paths: AppPaths, settings: Settings, problems: list[str], when: datetime) -> str:
    """Back up a file with bad fields, rewrite it with the good ones, and say which fields were reset."""
    path = paths.settings_file
    which = "That setting is" if len(problems) == 1 else "Those settings are"
    reset = f"Settings in {path}: {'; '.join(problems)}. {which} back to the default, every other setting is kept"
    backup = _backup_path(path, when)
    try:
        shutil.copy2(path, backup)
        save_settings(paths, settings)
    except OSError as error:
        return f"{reset}; the file could not be backed up or rewritten ({error})."
    return f"{reset}; the old file was saved as {backup}."


def _set_aside(path: Path, problem: str, when: datetime) -> str:
    """Rename a bad settings file out of the way and say what happened."""
    backup = _backup_path(path, when)
    try:
        os.replace(path, backup)
    except OSError as error:
        return (
            f"Settings in {path} were unusable: {problem}. Using defaults; the file could not be backed up ({error})."
        )
    return f"Settings in {path} were unusable: {problem}. Using defaults; the old file was saved as {backup}."


def _backup_path(path: Path, when: datetime) -> Path:
    """A backup name next to path that does not clobber an earlier backup."""
    base = path.with_name(f"{path.name}.corrupt-{when:%Y%m%d-%H%M%S}")
    candidate, counter = base, 1
    while candidate.exists():
        candidate = base.with_name(f"{base.name}-{counter}")
        counter += 1
    return candidate


def save_settings(paths: AppPaths, settings: Settings) -> None:
    """Validate and write settings atomically (temp file + os.replace) as pretty JSON."""
    data = settings_to_dict(settings)
    settings_from_dict(data)  # refuse to write a file the next load would reject
    write_json_atomic(paths.settings_file, data)
