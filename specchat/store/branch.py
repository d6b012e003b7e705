"""Branch a conversation: a new one holding copies of its messages up to one of them; mixed into ConversationStore.
No Qt.

Every column is copied as it is saved, read from the schema, so a per-chat setting a later migration adds
(like max_tokens) goes along without a change here."""

from __future__ import annotations

import sqlite3
import time
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .records import Conversation, StoredMessage

BRANCH_SUFFIX = " (branch)"
OWN_COLUMNS = {  # what each copy gets anew instead of copying
    "conversations": ("id", "title", "created_at", "updated_at"),
    "messages": ("id", "conversation_id"),
    "reply_versions": ("message_id",),
}


def branch_title(title: str) -> str:
    """The title of a branch of a conversation titled `title`."""
    return title + BRANCH_SUFFIX


class BranchMixin:
    """Branching; the host class provides _db, _transaction(), _message(), get() and columns()."""

    _db: sqlite3.Connection

    if TYPE_CHECKING:  # provided by the host class (ConversationStore)

        def _transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...

        def _message(self, message_id: int) -> StoredMessage | None: ...

        def get(self, conversation_id: int) -> Conversation: ...

        def columns(self, table: str) -> list[str]: ...

    def branch(self, conversation_id: int, through_message_id: int) -> Conversation:
        """A new conversation holding copies of this one's messages up to and including `through_message_id`
        (each reply with its versions, stats and trace), with the same system prompt and per-chat settings,
        titled '<title> (branch)'; the original is unchanged. KeyError when the message is not in it."""
        message = self._message(through_message_id)
        if message is None or message.conversation_id != conversation_id:
            raise KeyError(f"conversation {conversation_id} has no message with id {through_message_id}")
        source = self.get(conversation_id)
        with self._transaction() as db:
            branch_id = self._copy_conversation(db, source)
            kept = db.execute(
                "SELECT id FROM messages WHERE conversation_id = ? AND position <= ? ORDER BY position",
                (conversation_id, message.position),
            ).fetchall()
            for row in kept:
                self._copy_message(db, row["id"], branch_id)
        return self.get(branch_id)

    def _copy_conversation(self, db: sqlite3.Connection, source: Conversation) -> int:
        """Inside a transaction: a new conversation with the source's settings and the branch title; its id."""
        names = self._copied_columns("conversations")
        now = time.time()
        cursor = db.execute(
            f"INSERT INTO conversations (title, created_at, updated_at{_leading(names)})"
            f" SELECT ?, ?, ?{_leading(names)} FROM conversations WHERE id = ?",
            (branch_title(source.title), now, now, source.id),
        )
        return _new_id(cursor)

    def _copy_message(self, db: sqlite3.Connection, message_id: int, conversation_id: int) -> None:
        """Inside a transaction: copy one message (at its own position) and its reply versions into a conversation."""
        names = self._copied_columns("messages")
        cursor = db.execute(
            f"INSERT INTO messages (conversation_id{_leading(names)}) SELECT ?{_leading(names)} FROM messages"
            " WHERE id = ?",
            (conversation_id, message_id),
        )
        versions = self._copied_columns("reply_versions")
        db.execute(
            f"INSERT INTO reply_versions (message_id{_leading(versions)}) SELECT ?{_leading(versions)}"
            " FROM reply_versions WHERE message_id = ?",
            (_new_id(cursor), message_id),
        )

    def _copied_columns(self, table: str) -> list[str]:
        return [name for name in self.columns(table) if name not in OWN_COLUMNS[table]]


def _leading(names: list[str]) -> str:
    """', a, b' for column names read from the schema (never from input), to follow other names in SQL."""
    return "".join(f', "{name}"' for name in names)


def _new_id(cursor: sqlite3.Cursor) -> int:
    if cursor.lastrowid is None:
        raise sqlite3.OperationalError("the INSERT made no row")
    return cursor.lastrowid
