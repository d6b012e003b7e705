"""Conversations and their messages in one SQLite file (WAL); no Qt, one thread."""

from __future__ import annotations

import errno
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .branch import BranchMixin
from .migrations import LATEST_VERSION, migrate, user_version
from .versions import EDITED_BY_HAND, VersionsMixin

DEFAULT_TITLE = "New chat"
ROLES = ("user", "assistant")
IN_MEMORY = ":memory:"
CORRUPTION_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
TRACE_TOKENS = "tokens"  # the key of a reply's token ids in its trace
# what recovery may copy into a new store, parents first: messages need their conversation, settings their preset
RECOVERABLE_TABLES = ("presets", "conversations", "messages", "reply_versions", "chat_settings", "pinned")
OWNED_ROWS = {  # table: (its column naming the row it belongs to, that row's table)
    "reply_versions": ("message_id", "messages"),
    "chat_settings": ("conversation_id", "conversations"),
    "pinned": ("conversation_id", "conversations"),
}
BUSY_TIMEOUT_S = 1.0  # how long a write waits for another program's lock before it is refused (and said)


class NewerDatabaseError(RuntimeError):
    """The file's schema is newer than this code knows; opening it would risk its data."""

    def __init__(self, path: Path, version: int):
        super().__init__(f"{path} was written by a newer SpecChat (schema {version}, this one knows {LATEST_VERSION})")
        self.version = version


class CorruptDatabaseError(sqlite3.DatabaseError):
    """The file is not a database, or SQLite's integrity check found damage."""


def is_corruption(error: BaseException) -> bool:
    """True for SQLite's "malformed" and "not a database" errors (not for locked or unreadable files)."""
    return isinstance(error, CorruptDatabaseError) or (
        isinstance(error, sqlite3.DatabaseError) and getattr(error, "sqlite_errorcode", None) in CORRUPTION_CODES
    )


def sqlite_code(error: BaseException) -> int | None:
    """SQLite's primary result code of an error (SQLITE_FULL, SQLITE_BUSY, ...); None for other errors."""
    code = getattr(error, "sqlite_errorcode", None) if isinstance(error, sqlite3.Error) else None
    return code & 0xFF if isinstance(code, int) else None  # an extended code keeps its primary one in the low byte


def is_disk_full(error: BaseException) -> bool:
    """True for SQLite's "database or disk is full" and for a write refused for want of space (or quota)."""
    if isinstance(error, OSError):
        return error.errno in (errno.ENOSPC, errno.EDQUOT)
    return sqlite_code(error) == sqlite3.SQLITE_FULL


def is_locked(error: BaseException) -> bool:
    """True when another connection holds the database (SQLite's busy and locked codes)."""
    return sqlite_code(error) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


@dataclass(frozen=True)
class Conversation:
    """One saved chat: its title, system prompt, times (seconds since the epoch) and its own reply length
    (max_tokens; None: the default from Preferences)."""

    id: int
    title: str
    system_prompt: str
    created_at: float
    updated_at: float
    max_tokens: int | None = None


@dataclass(frozen=True)
class StoredMessage:
    """One message; stats is the generation's figures for replies; complete is False while (or if) a reply streams;
    trace is a reply's draft tints, rejection marks and token ids (JSON-ready dict); version is the shown
    version's number."""

    id: int
    conversation_id: int
    position: int
    role: str
    content: str
    stats: dict[str, Any] | None = None
    cancelled: bool = False
    created_at: float = field(default=0.0, compare=False)
    complete: bool = True
    trace: dict[str, Any] | None = field(default=None, compare=False)
    version: int = 0

    def as_chat(self) -> dict[str, str]:
        """The {"role", "content"} dict a chat template takes."""
        return {"role": self.role, "content": self.content}

    @property
    def edited_by_hand(self) -> bool:
        """True for a reply whose text the user changed after it was generated (edit_reply)."""
        return bool((self.stats or {}).get(EDITED_BY_HAND))

    @property
    def token_ids(self) -> list[int] | None:
        """A reply's token ids as generated (kept in its trace); None when it was saved without them."""
        ids = (self.trace or {}).get(TRACE_TOKENS)
        if not isinstance(ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
            return None
        return ids


class ConversationStore(VersionsMixin, BranchMixin):
    """Create, list, search, rename, branch and delete conversations; append and truncate messages; reply versions."""

    def __init__(self, db_path: str | Path):
        """Open (or create) the database and bring it to the latest schema.

        Raises NewerDatabaseError for a file from a newer SpecChat and CorruptDatabaseError (or SQLite's
        own DatabaseError) for a damaged one; open_store() turns those into a backup and a report.
        """
        self.in_memory = str(db_path) == IN_MEMORY
        self.path = Path(db_path)
        # called with a conversation's id after its title followed a change to its first message
        self.title_listeners: list[Callable[[int], None]] = []
        if not self.in_memory:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        # autocommit: every write goes through _transaction(), so BEGIN/COMMIT are ours, never implicit
        self._db = sqlite3.connect(str(db_path), isolation_level=None, timeout=BUSY_TIMEOUT_S)
        try:
            self._open()
        except BaseException:
            self._db.close()
            raise

    @classmethod
    def snapshot(cls, db_path: str | Path) -> ConversationStore:
        """An in-memory copy of a database file that must not be written (its folder is read-only)."""
        store = cls(IN_MEMORY)
        for uri in (f"file:{db_path}?mode=ro", f"file:{db_path}?immutable=1"):  # immutable: no -shm can be made
            try:
                source = sqlite3.connect(uri, uri=True)
                try:
                    source.backup(store._db)
                finally:
                    source.close()
                break
            except sqlite3.Error:
                continue
        store._open()  # the copy is checked and migrated like any database, in memory
        return store

    def _open(self) -> None:
        self._db.row_factory = sqlite3.Row
        check = self._db.execute("PRAGMA quick_check").fetchall()
        if [tuple(row) for row in check] != [("ok",)]:
            lines = [line for row in check for line in str(row[0]).splitlines() if not line.startswith("***")]
            raise CorruptDatabaseError(f"SQLite's integrity check failed: {lines[0] if lines else 'no details'}")
        version = user_version(self._db)
        if version > LATEST_VERSION:
            raise NewerDatabaseError(self.path, version)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: no corruption, no fsync per message
        self._db.execute("PRAGMA foreign_keys=ON")
        migrate(self._db)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: everything inside commits together or not at all."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
            self._db.execute("COMMIT")
        except BaseException:
            # SQLite rolls back by itself after some errors (SQLITE_FULL, SQLITE_IOERR): a second ROLLBACK
            # would fail and hide the error that matters; a failed COMMIT leaves the transaction open.
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        """Close the database file."""
        self._db.close()

    # --- conversations ---

    def create(
        self, title: str = DEFAULT_TITLE, system_prompt: str = "", max_tokens: int | None = None
    ) -> Conversation:
        """A new empty conversation (max_tokens: its own reply length, None for the default)."""
        _check_max_tokens(max_tokens)
        now = time.time()
        with self._transaction():
            cur = self._db.execute(
                "INSERT INTO conversations (title, system_prompt, created_at, updated_at, max_tokens)"
                " VALUES (?, ?, ?, ?, ?)",
                (title, system_prompt, now, now, max_tokens),
            )
        return self.get(_inserted_id(cur))

    def get(self, conversation_id: int) -> Conversation:
        """One conversation; KeyError when there is none with this id."""
        row = self._db.execute("SELECT * FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        if row is None:
            raise KeyError(f"no conversation with id {conversation_id}")
        return Conversation(**dict(row))

    def conversations(self, search: str = "") -> list[Conversation]:
        """Conversations, most recently updated first; search matches titles and message text."""
        query = "SELECT * FROM conversations"
        args: tuple[str, ...] = ()
        if search.strip():
            pattern = f"%{_escape_like(search.strip())}%"
            query += (
                " WHERE title LIKE ? ESCAPE '\\' OR id IN (SELECT conversation_id FROM messages"
                " WHERE content LIKE ? ESCAPE '\\')"
            )
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

    def set_max_tokens(self, conversation_id: int, max_tokens: int | None) -> None:
        """Set this conversation's own reply length (None: it follows the default from Preferences)."""
        _check_max_tokens(max_tokens)
        self._update(conversation_id, "max_tokens", max_tokens)

    def delete(self, conversation_id: int) -> None:
        """Delete a conversation and its messages."""
        with self._transaction():
            self._db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    # --- messages ---

    def messages(self, conversation_id: int) -> list[StoredMessage]:
        """The conversation's messages in order."""
        rows = self._db.execute(
            "SELECT * FROM messages WHERE conversation_id = ? ORDER BY position", (conversation_id,)
        ).fetchall()
        return [_message(r) for r in rows]

    def add_message(
        self,
        conversation_id: int,
        role: str,
        content: str,
        stats: dict[str, Any] | None = None,
        cancelled: bool = False,
    ) -> StoredMessage:
        """Append a complete message (or a reply that was stopped: cancelled=True)."""
        _check_role(role)
        self.get(conversation_id)
        with self._transaction():
            message_id = self._insert(conversation_id, role, content, stats, cancelled, complete=True)
        return self._written(message_id)

    def replace_from(self, conversation_id: int, position: int, role: str, content: str) -> StoredMessage:
        """Edit-and-resend: drop the messages from `position` on and append this one, in one transaction."""
        _check_role(role)
        self.get(conversation_id)
        with self._changing_messages(conversation_id) as db:
            db.execute("DELETE FROM messages WHERE conversation_id = ? AND position >= ?", (conversation_id, position))
            message_id = self._insert(conversation_id, role, content, None, False, complete=True)
        return self._written(message_id)

    def begin_reply(self, conversation_id: int) -> StoredMessage:
        """Append an empty assistant row marked incomplete; update_reply fills it while the reply streams."""
        self.get(conversation_id)
        with self._transaction():
            message_id = self._insert(conversation_id, "assistant", "", None, False, complete=False)
        return self._written(message_id)

    def update_reply(self, message_id: int, content: str) -> None:
        """Save the text a streaming reply has so far (the row stays incomplete)."""
        with self._transaction() as db:
            db.execute("UPDATE messages SET content = ? WHERE id = ?", (content, message_id))

    def finish_reply(
        self,
        message_id: int,
        content: str,
        stats: dict[str, Any] | None,
        cancelled: bool,
        trace: dict[str, Any] | None = None,
    ) -> StoredMessage | None:
        """Save a reply's final text, stats and trace and mark it complete (None if its conversation was deleted);
        a regenerated reply's result is also kept as its newest version."""
        with self._transaction() as db:
            db.execute(
                "UPDATE messages SET content = ?, stats = ?, cancelled = ?, trace = ?, complete = 1 WHERE id = ?",
                (content, _to_json(stats), int(cancelled), _to_json(trace), message_id),
            )
            self._record_version(message_id)
        return self._message(message_id)

    def begin_continue(self, message_id: int) -> None:
        """A reply goes on from where it stopped: the row stays (its text grows through update_reply), marked
        incomplete until finish_continued."""
        with self._transaction() as db:
            db.execute("UPDATE messages SET complete = 0 WHERE id = ?", (message_id,))

    def finish_continued(
        self, message_id: int, content: str, stats: dict[str, Any] | None, cancelled: bool, trace: dict[str, Any] | None
    ) -> StoredMessage | None:
        """Save a continued reply in place: the row and, for a regenerated reply, the version shown (no new
        version: it is the same reply, longer). None if its conversation was deleted."""
        self._rewrite_shown(message_id, content, _to_json(stats), cancelled, _to_json(trace))
        return self._message(message_id)

    def delete_message(self, message_id: int) -> None:
        """Delete one message (a reply stopped before it said anything)."""
        message = self._message(message_id)
        if message is None:
            return
        with self._changing_messages(message.conversation_id) as db:
            db.execute("DELETE FROM messages WHERE id = ?", (message_id,))
            self._time_of_last_message(message.conversation_id)

    def truncate(self, conversation_id: int, keep: int) -> None:
        """Delete every message from position `keep` on (regenerate)."""
        with self._changing_messages(conversation_id) as db:
            db.execute("DELETE FROM messages WHERE conversation_id = ? AND position >= ?", (conversation_id, keep))
            db.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (time.time(), conversation_id))

    def _insert(
        self,
        conversation_id: int,
        role: str,
        content: str,
        stats: dict[str, Any] | None,
        cancelled: bool,
        complete: bool,
    ) -> int:
        """Append a message at the next position and touch the conversation; call inside a transaction."""
        now = time.time()
        position = self._db.execute(
            "SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE conversation_id = ?", (conversation_id,)
        ).fetchone()[0]
        cur = self._db.execute(
            "INSERT INTO messages (conversation_id, position, role, content, stats, cancelled, created_at, complete)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (conversation_id, position, role, content, _to_json(stats), int(cancelled), now, int(complete)),
        )
        self._db.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id))
        return _inserted_id(cur)

    def _message(self, message_id: int) -> StoredMessage | None:
        row = self._db.execute("SELECT * FROM messages WHERE id = ?", (message_id,)).fetchone()
        return _message(row) if row is not None else None

    def _written(self, message_id: int) -> StoredMessage:
        """A message this call has just written (so it exists)."""
        message = self._message(message_id)
        if message is None:
            raise KeyError(f"no message with id {message_id}")
        return message

    # --- titles made from the first message ---

    def _title_is_derived(self, conversation_id: int) -> bool:
        """True when the title is the default or was made from the first user message (not one the user gave);
        False when there is no such conversation."""
        row = self._db.execute("SELECT title FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        if row is None:
            return False
        first = self._first_user_text(conversation_id)
        return row[0] == DEFAULT_TITLE or (first is not None and row[0] == title_from(first))

    def _first_user_text(self, conversation_id: int) -> str | None:
        row = self._db.execute(
            "SELECT content FROM messages WHERE conversation_id = ? AND role = 'user' ORDER BY position LIMIT 1",
            (conversation_id,),
        ).fetchone()
        return row[0] if row is not None else None

    @contextmanager
    def _changing_messages(self, conversation_id: int) -> Iterator[sqlite3.Connection]:
        """A write transaction that changes a conversation's messages: a derived title then follows the first
        user message (DEFAULT_TITLE when none is left), a title the user gave stays; the title listeners
        hear of a change once it is committed."""
        with self._transaction() as db:
            derived = self._title_is_derived(conversation_id)
            yield db
            retitled = derived and self._follow_first_message(conversation_id)
        if retitled:
            for listener in list(self.title_listeners):
                listener(conversation_id)

    def _follow_first_message(self, conversation_id: int) -> bool:
        """Inside a transaction: title the conversation after its first user message; True when that changed it."""
        first = self._first_user_text(conversation_id)
        title = DEFAULT_TITLE if first is None else title_from(first)
        if title == self.get(conversation_id).title:
            return False
        self._db.execute("UPDATE conversations SET title = ? WHERE id = ?", (title, conversation_id))
        return True

    # --- recovery ---

    def columns(self, table: str) -> list[str]:
        """The column names of one of the store's tables."""
        return [row[1] for row in self._db.execute(f"PRAGMA table_info({table})")]

    def import_rows(self, table: str, columns: list[str], rows: list[tuple[object, ...]]) -> int:
        """Insert rows recovered from a damaged file, keeping their ids; returns how many went in.

        Rows that break a constraint are skipped; messages whose conversation was lost get a new one; a reply
        version, a chat's settings or pin whose message or chat was lost is left out; a chat's settings keep
        their preset only when it was recovered too (copy presets and conversations first).
        """
        if table not in RECOVERABLE_TABLES or not rows:
            return 0
        marks = ", ".join("?" * len(columns))
        with self._transaction() as db:
            if table in OWNED_ROWS:  # a row about a message or a chat that was lost cannot be shown: leave it
                owner, parent = OWNED_ROWS[table]
                if owner not in columns:
                    return 0
                known = {r[0] for r in db.execute(f"SELECT id FROM {parent}")}
                rows = [row for row in rows if row[columns.index(owner)] in known]
            if table == "chat_settings" and "preset_id" in columns:
                rows = self._without_lost_presets(columns.index("preset_id"), rows)
            if table == "messages" and "conversation_id" in columns:
                self._adopt_orphans({row[columns.index("conversation_id")] for row in rows})
            before = db.total_changes
            db.executemany(f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)
            return db.total_changes - before

    def _without_lost_presets(self, index: int, rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
        """The rows with a preset id that names no recovered preset cleared (a later preset could take its id)."""
        known = {r[0] for r in self._db.execute("SELECT id FROM presets")}
        return [row if row[index] in known else (*row[:index], None, *row[index + 1 :]) for row in rows]

    def _adopt_orphans(self, conversation_ids: set[object]) -> None:
        now = time.time()
        for cid in conversation_ids:
            if (
                isinstance(cid, int)
                and self._db.execute("SELECT 1 FROM conversations WHERE id = ?", (cid,)).fetchone() is None
            ):
                self._db.execute(
                    "INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?, ?, ?, ?)",
                    (cid, f"Recovered conversation {cid}", now, now),
                )

    def _update(self, conversation_id: int, column: str, value: str | int | None) -> None:
        self.get(conversation_id)
        with self._transaction():
            # not a new activity: the list order (by updated_at) stays as it was
            self._db.execute(f"UPDATE conversations SET {column} = ? WHERE id = ?", (value, conversation_id))


def _message(row: sqlite3.Row) -> StoredMessage:
    data = dict(row)
    data["stats"] = json.loads(data["stats"]) if data["stats"] else None
    data["trace"] = json.loads(data["trace"]) if data.get("trace") else None
    data["cancelled"] = bool(data["cancelled"])
    data["complete"] = bool(data["complete"])
    return StoredMessage(**data)


def _to_json(stats: dict[str, Any] | None) -> str | None:
    return json.dumps(stats) if stats is not None else None


def _inserted_id(cur: sqlite3.Cursor) -> int:
    """The rowid an INSERT just made (sqlite3 types lastrowid as optional: None only before any INSERT)."""
    if cur.lastrowid is None:
        raise sqlite3.OperationalError("the INSERT made no row")
    return cur.lastrowid


def _check_max_tokens(max_tokens: int | None) -> None:
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise ValueError(f"a conversation's max tokens must be a whole number of at least 1, got {max_tokens!r}")


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def title_from(text: str, limit: int = 48) -> str:
    """A conversation title from the first user message: first line, shortened."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "") or DEFAULT_TITLE
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
