"""Presets (a named system prompt, sampling and max tokens) and what each chat keeps beside its row: its preset,
its own sampling while it has one, and the target/draft pair it was last replied with. These run SQL on the
ConversationStore's own connection (tables from schema 5); no Qt."""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from dataclasses import asdict, dataclass, fields

from .conversations import ConversationStore

SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p")

log = logging.getLogger(__name__)


class PresetError(ValueError):
    """A preset name that cannot be used (blank, or taken by another preset)."""


@dataclass(frozen=True)
class PresetFields:
    """What a preset fills in the Settings panel."""

    system_prompt: str
    temperature: float
    top_p: float
    top_k: int
    min_p: float
    max_tokens: int

    def sampling(self) -> dict[str, float]:
        """The sampling values alone, as Settings field values."""
        return {key: getattr(self, key) for key in SAMPLING_KEYS}


@dataclass(frozen=True)
class Preset:
    """A saved preset; is_default: new chats start from it."""

    id: int
    name: str
    fields: PresetFields
    is_default: bool = False


@dataclass(frozen=True)
class ChatSettings:
    """What a chat keeps beside its row (all None for a chat that has none of it)."""

    preset_id: int | None = None
    sampling: dict[str, float] | None = None  # its own sampling, kept while it has (or had) a preset
    target: str | None = None  # the pair it was last replied with
    draft: str | None = None


FIELD_NAMES = tuple(f.name for f in fields(PresetFields))


# --- presets ---


def presets(store: ConversationStore) -> list[Preset]:
    """Every preset, by name."""
    rows = store._db.execute("SELECT * FROM presets ORDER BY name COLLATE NOCASE").fetchall()
    return [_preset(row) for row in rows]


def preset(store: ConversationStore, preset_id: int | None) -> Preset | None:
    """One preset; None when there is no such preset (deleted) or preset_id is None."""
    if preset_id is None:
        return None
    row = store._db.execute("SELECT * FROM presets WHERE id = ?", (preset_id,)).fetchone()
    return _preset(row) if row is not None else None


def default_preset(store: ConversationStore) -> Preset | None:
    """The preset new chats start from, if one is marked."""
    row = store._db.execute("SELECT * FROM presets WHERE is_default = 1 ORDER BY id LIMIT 1").fetchone()
    return _preset(row) if row is not None else None


def save_preset(store: ConversationStore, name: str, values: PresetFields) -> Preset:
    """Save a new preset; PresetError when the name is blank or another preset has it."""
    name = _usable_name(store, name)
    columns = ", ".join(("name", *FIELD_NAMES, "created_at"))
    marks = ", ".join("?" * (len(FIELD_NAMES) + 2))
    with store._transaction() as db:
        cur = db.execute(f"INSERT INTO presets ({columns}) VALUES ({marks})", (name, *_row(values), time.time()))
    saved = preset(store, cur.lastrowid)
    assert saved is not None  # just written
    return saved


def update_preset(store: ConversationStore, preset_id: int, values: PresetFields) -> None:
    """Save new values into an existing preset (its name and default mark stay)."""
    assignments = ", ".join(f"{name} = ?" for name in FIELD_NAMES)
    with store._transaction() as db:
        db.execute(f"UPDATE presets SET {assignments} WHERE id = ?", (*_row(values), preset_id))


def rename_preset(store: ConversationStore, preset_id: int, name: str) -> None:
    """Give a preset a new name; PresetError when it is blank or another preset has it."""
    name = _usable_name(store, name, preset_id)
    with store._transaction() as db:
        db.execute("UPDATE presets SET name = ? WHERE id = ?", (name, preset_id))


def delete_preset(store: ConversationStore, preset_id: int) -> None:
    """Delete a preset; the chats that used it keep their own settings and show no preset."""
    with store._transaction() as db:
        db.execute("DELETE FROM presets WHERE id = ?", (preset_id,))
        db.execute("UPDATE chat_settings SET preset_id = NULL WHERE preset_id = ?", (preset_id,))


def set_default_preset(store: ConversationStore, preset_id: int | None) -> None:
    """Mark the preset new chats start from (None: none does); at most one is marked."""
    with store._transaction() as db:
        db.execute("UPDATE presets SET is_default = (id IS ?)", (preset_id,))


# --- what a chat keeps ---


def chat_settings(store: ConversationStore, conversation_id: int) -> ChatSettings:
    """What a chat keeps beside its row (empty for one that keeps nothing)."""
    row = store._db.execute("SELECT * FROM chat_settings WHERE conversation_id = ?", (conversation_id,)).fetchone()
    if row is None:
        return ChatSettings()
    return ChatSettings(
        row["preset_id"], _sampling(row["sampling"], conversation_id), row["target_path"], row["draft_path"]
    )


def set_chat_preset(
    store: ConversationStore, conversation_id: int, preset_id: int | None, sampling: dict[str, float] | None
) -> None:
    """Remember a chat's preset and its own sampling (None, None: the chat has no preset and follows the panel)."""
    text = json.dumps({key: sampling[key] for key in SAMPLING_KEYS}) if sampling is not None else None
    _upsert(store, conversation_id, preset_id=preset_id, sampling=text)


def set_chat_sampling(store: ConversationStore, conversation_id: int, sampling: dict[str, float]) -> None:
    """Remember a chat's own sampling (its preset stays)."""
    _upsert(store, conversation_id, sampling=json.dumps({key: sampling[key] for key in SAMPLING_KEYS}))


def set_chat_pair(store: ConversationStore, conversation_id: int, target: str, draft: str | None) -> None:
    """Remember the target/draft pair a chat was replied with."""
    _upsert(store, conversation_id, target_path=target, draft_path=draft)


def _upsert(store: ConversationStore, conversation_id: int, **values: object) -> None:
    store.get(conversation_id)  # KeyError for a chat that is not there
    names = ", ".join(values)
    updates = ", ".join(f"{name} = excluded.{name}" for name in values)
    with store._transaction() as db:
        db.execute(
            f"INSERT INTO chat_settings (conversation_id, {names}) VALUES (?{', ?' * len(values)})"
            f" ON CONFLICT (conversation_id) DO UPDATE SET {updates}",
            (conversation_id, *values.values()),
        )


# --- rows ---


def _usable_name(store: ConversationStore, name: str, own_id: int | None = None) -> str:
    name = " ".join(name.split())
    if not name:
        raise PresetError("A preset needs a name")
    row = store._db.execute("SELECT id, name FROM presets WHERE name = ? COLLATE NOCASE", (name,)).fetchone()
    if row is not None and row["id"] != own_id:
        raise PresetError(f"A preset named “{row['name']}” already exists; choose another name")
    return name


def _row(values: PresetFields) -> tuple[object, ...]:
    data = asdict(values)
    return tuple(data[name] for name in FIELD_NAMES)


def _preset(row: sqlite3.Row) -> Preset:
    values = PresetFields(**{name: row[name] for name in FIELD_NAMES})
    return Preset(row["id"], row["name"], values, bool(row["is_default"]))


def _sampling(text: str | None, conversation_id: int) -> dict[str, float] | None:
    """A chat's saved sampling; None (and a log line) when the saved text is not four numbers."""
    if not text:
        return None
    try:
        data = json.loads(text)
        values = {key: data[key] for key in SAMPLING_KEYS}
    except (ValueError, TypeError, KeyError):
        values = {}
    if not values or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values.values()):
        log.warning("conversation %s: its saved sampling %r is unreadable; the preset's is used", conversation_id, text)
        return None
    return values
