"""Conversations and their messages in one SQLite file (WAL); no Qt, one thread."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

SCHEMA_VERSION = 1
DEFAULT_TITLE = "New chat"
ROLES = ("user", "assistant")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    system_prompt TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    stats TEXT,
    cancelled INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    UNIQUE (conversation_id, position)
);
"""


@dataclass(frozen=True)
class Conversation:
    """One saved chat: its title, system prompt and times (seconds since the epoch)."""

    id: int
    title: str
    system_prompt: str
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class StoredMessage:
    """One complete (or stopped) message; stats is the generation's figures for replies."""

    id: int
    conversation_id: int
    position: int
    role: str
    content: str
    stats: dict | None = None
    cancelled: bool = False
    created_at: float = field(default=0.0, compare=False)

    def as_chat(self) -> dict[str, str]:
        """The {"role", "content"} dict a chat template takes."""
        return {"role": self.role, "content": self.content}


class ConversationStore:
    """Create, list, search, rename and delete conversations; append and truncate messages."""

    def __init__(self, db_path: str | Path):
        self.path = Path(db_path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: no corruption, no fsync per message
        self._db.execute("PRAGMA foreign_keys=ON")
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise RuntimeError(f"{self.path} was written by a newer SpecChat (schema {version})")
        with self._db:
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def close(self) -> None:
        """Close the database file."""
        self._db.close()

    # --- conversations ---

    def create(self, title: str = DEFAULT_TITLE, system_prompt: str = "") -> Conversation:
        """A new empty conversation."""
        now = time.time()
        with self._db:
            cur = self._db.execute(
                "INSERT INTO conversations (title, system_prompt, created_at, updated_at) VALUES (?, ?, ?, ?)",
                (title, system_prompt, now, now))
        return self.get(cur.lastrowid)

    def get(self, conversation_id: int) -> Conversation:
        """One conversation; KeyError when there is none with this id."""
        row = self._db.execute("SELECT * FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        if row is None:
            raise KeyError(f"no conversation with id {conversation_id}")
        return Conversation(**dict(row))

    def conversations(self, search: str = "") -> list[Conversation]:
        """Conversations, most recently updated first; search matches titles and message text."""
        query = "SELECT * FROM conversations"
        args: tuple = ()
        if search.strip():
            pattern = f"%{_escape_like(search.strip())}%"
            query += (" WHERE title LIKE ? ESCAPE '\\' OR id IN (SELECT conversation_id FROM messages"
                      " WHERE content LIKE ? ESCAPE '\\')")
            args = (pattern, pattern)
        rows = self._db.execute(query + " ORDER BY updated_at DESC, id DESC", args).fetchall()
        return [Conversation(**dict(r)) for r in rows]

    def rename(self, conversation_id: int, title: str) -> None:
        """Give a conversation a new title (blank titles are refused)."""
        if not title.strip():
            raise ValueError("a conversation title cannot be empty")
        self._update(conversation_id, "title", title.strip())

    def set_system_prompt(self, conversation_id: int, text: str) -> None:
        """Set the system prompt used for every reply in this conversation."""
        self._update(conversation_id, "system_prompt", text)

    def delete(self, conversation_id: int) -> None:
        """Delete a conversation and its messages."""
        with self._db:
            self._db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    # --- messages ---

    def messages(self, conversation_id: int) -> list[StoredMessage]:
        """The conversation's messages in order."""
        rows = self._db.execute(
            "SELECT * FROM messages WHERE conversation_id = ? ORDER BY position", (conversation_id,)).fetchall()
        return [_message(r) for r in rows]

    def add_message(self, conversation_id: int, role: str, content: str,
                    stats: dict | None = None, cancelled: bool = False) -> StoredMessage:
        """Append a complete message (or a reply that was stopped: cancelled=True)."""
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
        self.get(conversation_id)
        now = time.time()
        with self._db:
            position = self._db.execute(
                "SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE conversation_id = ?",
                (conversation_id,)).fetchone()[0]
            cur = self._db.execute(
                "INSERT INTO messages (conversation_id, position, role, content, stats, cancelled, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (conversation_id, position, role, content, json.dumps(stats) if stats is not None else None,
                 int(cancelled), now))
            self._db.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id))
        row = self._db.execute("SELECT * FROM messages WHERE id = ?", (cur.lastrowid,)).fetchone()
        return _message(row)

    def truncate(self, conversation_id: int, keep: int) -> None:
        """Delete every message from position `keep` on (edit-and-resend, regenerate)."""
        with self._db:
            self._db.execute("DELETE FROM messages WHERE conversation_id = ? AND position >= ?",
                             (conversation_id, keep))
            self._db.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (time.time(), conversation_id))

    def _update(self, conversation_id: int, column: str, value) -> None:
        self.get(conversation_id)
        with self._db:
            # not a new activity: the list order (by updated_at) stays as it was
            self._db.execute(f"UPDATE conversations SET {column} = ? WHERE id = ?", (value, conversation_id))


def _message(row: sqlite3.Row) -> StoredMessage:
    data = dict(row)
    data["stats"] = json.loads(data["stats"]) if data["stats"] else None
    data["cancelled"] = bool(data["cancelled"])
    return StoredMessage(**data)


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def title_from(text: str, limit: int = 48) -> str:
    """A conversation title from the first user message: first line, shortened."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "") or DEFAULT_TITLE
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
