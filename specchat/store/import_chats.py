"""Conversations read from JSON: SpecChat's own export (export.py), one or a list of them, or the OpenAI messages
format (a list of {role, content} objects, or an object with a "messages" list). A file is read whole and
checked before anything is written; then every conversation in it goes in in one transaction, or none. No Qt."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .conversations import ConversationStore
from .export import EXPORT_FORMAT, EXPORT_VERSION
from .records import DEFAULT_TITLE, ROLES, Conversation, _inserted_id, _to_json, title_from

MAX_IMPORT_BYTES = 256 * 1024 * 1024  # a file past this is refused before it is read into memory
SYSTEM_ROLES = ("system", "developer")  # OpenAI's newer name for the system message
SHAPES = 'a SpecChat export, a list of {"role", "content"} messages, or an object with a "messages" list'


class ChatImportError(ValueError):
    """A file that cannot be imported; the message names the problem in one line (items count from 1)."""


@dataclass(frozen=True)
class ImportedMessage:
    """One message to import; created_at None: the time of the import."""

    role: str
    content: str
    created_at: float | None = None
    cancelled: bool = False
    stats: dict[str, Any] | None = None


@dataclass(frozen=True)
class ImportedChat:
    """One conversation to import; times None: the time of the import."""

    title: str
    system_prompt: str
    messages: tuple[ImportedMessage, ...]
    created_at: float | None = None
    updated_at: float | None = None


def import_file(store: ConversationStore, path: str | Path) -> list[Conversation]:
    """Read a JSON file and add every conversation in it to the store; ChatImportError names what is wrong."""
    return import_text(store, read_text(Path(path)))


def import_text(store: ConversationStore, text: str) -> list[Conversation]:
    """Add every conversation in a JSON text to the store, all or none; returns them in the file's order."""
    return add_chats(store, parse_chats(text))


def read_text(path: Path) -> str:
    """A file's text (UTF-8, a byte-order mark allowed); ChatImportError when it cannot be read as such."""
    try:
        if path.stat().st_size > MAX_IMPORT_BYTES:
            raise ChatImportError(f"the file is larger than {MAX_IMPORT_BYTES // 2**20} MB")
        data = path.read_bytes()
    except OSError as error:
        raise ChatImportError(f"could not read it: {error.strerror or error}") from error
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ChatImportError(f"not UTF-8 text (byte {error.start + 1} cannot be read)") from error


def parse_chats(text: str) -> list[ImportedChat]:
    """The conversations a JSON text holds; ChatImportError (one line) when it is not JSON or not a known shape."""
    if not text.strip():
        raise ChatImportError("the file is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ChatImportError(f"not JSON: {error.msg} at line {error.lineno}, column {error.colno}") from error
    if _is_ours(data):
        return [_our_chat(data, "")]
    if isinstance(data, list) and data and all(_is_ours(item) for item in data):
        return [_our_chat(item, f"conversation {n}") for n, item in enumerate(data, start=1)]
    if isinstance(data, dict) and "messages" in data:
        return [_openai_chat(data["messages"], data.get("title"))]
    if isinstance(data, list):
        return [_openai_chat(data, None)]
    raise ChatImportError(f"wrong shape: expected {SHAPES}")


def add_chats(store: ConversationStore, chats: list[ImportedChat]) -> list[Conversation]:
    """Write the conversations in one transaction (a failure leaves the store as it was); returns them."""
    ids = []
    with store._transaction() as db:
        for chat in chats:
            now = time.time()
            created = now if chat.created_at is None else chat.created_at
            updated = now if chat.updated_at is None else chat.updated_at
            cur = db.execute(
                "INSERT INTO conversations (title, system_prompt, created_at, updated_at) VALUES (?, ?, ?, ?)",
                (chat.title, chat.system_prompt, created, updated),
            )
            ids.append(_inserted_id(cur))
            db.executemany(
                "INSERT INTO messages (conversation_id, position, role, content, stats, cancelled, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(ids[-1], n, *_message_row(m, created)) for n, m in enumerate(chat.messages)],
            )
    return [store.get(conversation_id) for conversation_id in ids]


def _message_row(message: ImportedMessage, chat_created: float) -> tuple[object, ...]:
    when = chat_created if message.created_at is None else message.created_at
    return message.role, message.content, _to_json(message.stats), int(message.cancelled), when


# --- SpecChat's own export ---


def _is_ours(data: object) -> bool:
    return isinstance(data, dict) and data.get("format") == EXPORT_FORMAT


def _our_chat(data: dict[str, Any], where: str) -> ImportedChat:
    """One exported conversation; where: '' for a file of one, 'conversation N' in a list of them."""
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ChatImportError(_at(where, f'"version" is {version!r}, not a whole number'))
    if version > EXPORT_VERSION:
        raise ChatImportError(_at(where, f"written by a newer SpecChat (export version {version})"))
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise ChatImportError(_at(where, '"messages" is missing or not a list'))
    item = f"{where}, item" if where else "item"
    return ImportedChat(
        title=_chat_text(data, "title", where).strip() or DEFAULT_TITLE,
        system_prompt=_chat_text(data, "system_prompt", where),
        messages=tuple(_our_message(m, f"{item} {n}") for n, m in enumerate(messages, start=1)),
        created_at=_time(data.get("created_at"), _at(where, '"created_at"')),
        updated_at=_time(data.get("updated_at"), _at(where, '"updated_at"')),
    )


def _our_message(item: object, where: str) -> ImportedMessage:
    if not isinstance(item, dict):
        raise ChatImportError(f"{where} is not an object with a role and content")
    role = item.get("role")
    if role not in ROLES:
        raise ChatImportError(f"{where} has role {role!r}; SpecChat's messages are {' or '.join(ROLES)}")
    content = item.get("content")
    if content is None:
        raise ChatImportError(f"{where} has no content")
    if not isinstance(content, str):
        raise ChatImportError(f"{where}: its content is {type(content).__name__}, not text")
    stats = item.get("stats")
    if stats is not None and not isinstance(stats, dict):
        raise ChatImportError(f'{where}: its "stats" is not an object')
    stopped = item.get("stopped", False)
    if not isinstance(stopped, bool):
        raise ChatImportError(f'{where}: its "stopped" is {stopped!r}, not true or false')
    return ImportedMessage(role, content, _time(item.get("created_at"), f'{where}: its "created_at"'), stopped, stats)


def _chat_text(data: dict[str, Any], key: str, where: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise ChatImportError(_at(where, f'"{key}" is {type(value).__name__}, not text'))
    return value


def _at(where: str, problem: str) -> str:
    """A problem, after the conversation it is in when the file holds several."""
    return f"{where}: {problem}" if where else problem


def _time(value: object, what: str) -> float | None:
    """An exported ISO time as seconds since the epoch (None when absent)."""
    if value is None:
        return None
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        return datetime.fromisoformat(value).timestamp()
    except ValueError as error:
        raise ChatImportError(f"{what} is {value!r}, not a date and time") from error


# --- OpenAI messages ---


def _openai_chat(messages: object, title: object) -> ImportedChat:
    if not isinstance(messages, list):
        raise ChatImportError(f'wrong shape: "messages" is not a list (expected {SHAPES})')
    if not messages:
        raise ChatImportError("the file holds no messages")
    system: list[str] = []
    kept: list[ImportedMessage] = []
    for n, item in enumerate(messages, start=1):
        role, content = _openai_message(item, n)
        if role in SYSTEM_ROLES:
            system.append(content)
        else:
            kept.append(ImportedMessage(role, content))
    first_user = next((m.content for m in kept if m.role == "user"), None)
    if isinstance(title, str) and title.strip():
        name = title.strip()
    else:
        name = title_from(first_user) if first_user is not None else DEFAULT_TITLE
    return ImportedChat(name, "\n\n".join(system), tuple(kept))


def _openai_message(item: object, n: int) -> tuple[str, str]:
    """One OpenAI message's role and text; ChatImportError naming the item for anything SpecChat cannot keep."""
    if not isinstance(item, dict) or ("role" not in item and "content" not in item):
        raise ChatImportError(f'item {n} is not a message: it needs a "role" and a "content"')
    role = item.get("role")
    if role is None:
        raise ChatImportError(f"item {n} has no role")
    if role not in (*ROLES, *SYSTEM_ROLES):
        raise ChatImportError(f"item {n} has role {role!r}; SpecChat imports user, assistant and system messages only")
    if item.get("tool_calls") or item.get("function_call"):
        raise ChatImportError(f"item {n} is a tool call; SpecChat imports text messages only")
    content = item.get("content")
    if content is None:
        raise ChatImportError(f"item {n} has no content")
    if isinstance(content, list):
        content = _text_parts(content, n)
    if not isinstance(content, str):
        raise ChatImportError(f"item {n}: its content is {type(content).__name__}, not text")
    return role, content


def _text_parts(parts: list[object], n: int) -> str:
    """The text of a content list ([{"type": "text", "text": ...}, ...]), parts joined by newlines."""
    texts = []
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else type(part).__name__
        if kind != "text" or not isinstance(part, dict) or not isinstance(part.get("text"), str):
            raise ChatImportError(f"item {n} holds a {kind!r} part; SpecChat imports text only")
        texts.append(part["text"])
    return "\n".join(texts)
