"""Conversations and their messages in one SQLite file (WAL); no Qt, one thread."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .branch import BranchMixin
from .errors import CorruptDatabaseError, NewerDatabaseError
from .messages import MessagesMixin
from .migrations import LATEST_VERSION, migrate, user_version
from .records import DEFAULT_TITLE, Conversation, _inserted_id
from .row_import import RowImportMixin
from .versions import VersionsMixin

IN_MEMORY = ":memory:"
BUSY_TIMEOUT_S = 1.0  # how long a write waits for another program's lock before it is refused (and said)


class ConversationStore(MessagesMixin, VersionsMixin, BranchMixin, RowImportMixin):
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

    def _update(self, conversation_id: int, column: str, value: str | int | None) -> None:
        self.get(conversation_id)
        with self._transaction():
            # not a new activity: the list order (by updated_at) stays as it was
            self._db.execute(f"UPDATE conversations SET {column} = ? WHERE id = ?", (value, conversation_id))

    # --- the schema (branching and recovery read it) ---

    def columns(self, table: str) -> list[str]:
        """The column names of one of the store's tables."""
        return [row[1] for row in self._db.execute(f"PRAGMA table_info({table})")]


def _check_max_tokens(max_tokens: int | None) -> None:
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise ValueError(f"a conversation's max tokens must be a whole number of at least 1, got {max_tokens!r}")


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
