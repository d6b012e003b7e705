"""User settings: a typed dataclass, validated JSON load with backups, atomic save."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from specchat.engine.modes import SpecMode
from specchat.jsonfile import write_json_atomic
from specchat.paths import AppPaths
from specchat.settings_checks import CHECKS, DASHBOARD_CHARTS, SCHEMA_VERSION, SettingsError, check_schema_version


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


assert set(CHECKS) == {f.name for f in fields(Settings)}, "every setting needs a check"


def settings_from_dict(data: Any) -> Settings:
    """Build validated Settings from parsed JSON; unknown keys ignored, missing ones defaulted."""
    if not isinstance(data, dict):
        raise SettingsError(f"settings must be a JSON object, got {type(data).__name__}")
    values = {name: check(name, data[name]) for name, check in CHECKS.items() if name in data}
    return Settings(**values)


def settings_keeping_valid(data: dict[str, Any]) -> tuple[Settings, list[str]]:
    """Settings from the fields that pass their check, and what was wrong with each field that did not."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for name, check in CHECKS.items():
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
            check_schema_version("schema_version", data["schema_version"])
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
