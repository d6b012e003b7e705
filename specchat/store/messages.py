"""A conversation's messages: append, stream a reply into its row, truncate, delete, and the title that follows
the first user message; mixed into ConversationStore. No Qt."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from .records import (
    DEFAULT_TITLE,
    ROLES,
    Conversation,
    StoredMessage,
    _inserted_id,
    _message,
    _to_json,
    title_from,
)


class MessagesMixin:
    """Message operations; the host class provides _db, _transaction(), get() and title_listeners, and
    VersionsMixin's _record_version(), _rewrite_shown() and _time_of_last_message()."""

    _db: sqlite3.Connection
    title_listeners: list[Callable[[int], None]]

    if TYPE_CHECKING:  # provided by the host class (ConversationStore) and VersionsMixin

        def _transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...

        def get(self, conversation_id: int) -> Conversation: ...

        def _record_version(self, message_id: int) -> None: ...

        def _rewrite_shown(
            self, message_id: int, content: str, stats: str | None, cancelled: bool, trace: str | None
        ) -> None: ...

        def _time_of_last_message(self, conversation_id: int) -> None: ...

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


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
