"""Reply versions (regenerate keeps each one), a reply edited by hand, and deleting a message; mixed into
ConversationStore. No Qt.

The messages row always holds the version shown; reply_versions holds every version of a reply that was
regenerated at least once (number 0 is the first), so history, search and export read messages alone.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .records import StoredMessage

EDITED_BY_HAND = "edited_by_hand"  # in a reply's stats: its text was changed by hand after it was generated


@dataclass(frozen=True)
class ReplyVersion:
    """One generation of a reply: its text, stats, draft trace and whether it was stopped."""

    number: int
    content: str
    stats: dict[str, Any] | None
    cancelled: bool
    trace: dict[str, Any] | None


class VersionsMixin:
    """Version and delete operations; the host class provides _db, _transaction(), _changing_messages()
    and _message()."""

    _db: sqlite3.Connection

    if TYPE_CHECKING:  # provided by the host class (ConversationStore)

        def _transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...

        def _message(self, message_id: int) -> StoredMessage | None: ...

        def _changing_messages(self, conversation_id: int) -> AbstractContextManager[sqlite3.Connection]: ...

    def versions(self, message_id: int) -> list[ReplyVersion]:
        """Every saved version of a reply, oldest first; [] for a reply never regenerated."""
        rows = self._db.execute(
            "SELECT * FROM reply_versions WHERE message_id = ? ORDER BY number", (message_id,)
        ).fetchall()
        return [
            ReplyVersion(r["number"], r["content"], _loads(r["stats"]), bool(r["cancelled"]), _loads(r["trace"]))
            for r in rows
        ]

    def begin_regenerate(self, message_id: int) -> None:
        """Keep the shown reply as a version and empty the row for the new one (incomplete until finished)."""
        with self._transaction() as db:
            if not self._version_count(message_id):
                db.execute(
                    "INSERT INTO reply_versions (message_id, number, content, stats, cancelled, trace,"
                    " created_at) SELECT id, 0, content, stats, cancelled, trace, created_at"
                    " FROM messages WHERE id = ?",
                    (message_id,),
                )
            db.execute(
                "UPDATE messages SET content = '', stats = NULL, cancelled = 0, trace = NULL, complete = 0"
                " WHERE id = ?",
                (message_id,),
            )

    def select_version(self, message_id: int, number: int) -> None:
        """Show version `number` of a reply: the conversation continues from it."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT * FROM reply_versions WHERE message_id = ? AND number = ?", (message_id, number)
            ).fetchone()
            if row is None:
                raise KeyError(f"reply {message_id} has no version {number}")
            db.execute(
                "UPDATE messages SET content = ?, stats = ?, cancelled = ?, trace = ?, version = ?,"
                " complete = 1 WHERE id = ?",
                (row["content"], row["stats"], row["cancelled"], row["trace"], number, message_id),
            )

    def edit_reply(self, message_id: int, content: str) -> StoredMessage:
        """Replace a reply's text by hand, in its row and in the version shown: its stats say so (EDITED_BY_HAND),
        its trace goes (tints, rejection marks and token ids no longer match the text), and a reply cut short by
        a crash counts as finished (its text is now the user's). ValueError for a user message, KeyError for none."""
        message = self._message(message_id)
        if message is None:
            raise KeyError(f"no message with id {message_id}")
        if message.role != "assistant":
            raise ValueError(f"only a reply can be edited by hand; message {message_id} is a {message.role} message")
        stats = json.dumps({**(message.stats or {}), EDITED_BY_HAND: True})
        self._rewrite_shown(message_id, content, stats, message.cancelled, None)
        edited = self._message(message_id)
        assert edited is not None  # written just now
        return edited

    def _rewrite_shown(
        self, message_id: int, content: str, stats: str | None, cancelled: bool, trace: str | None
    ) -> None:
        """Rewrite a reply in place, complete: its row and the version shown (if it has versions), never a new
        version (stats and trace as stored JSON)."""
        values = (content, stats, int(cancelled), trace)
        with self._transaction() as db:
            db.execute(
                "UPDATE messages SET content = ?, stats = ?, cancelled = ?, trace = ?, complete = 1 WHERE id = ?",
                (*values, message_id),
            )
            db.execute(
                "UPDATE reply_versions SET content = ?, stats = ?, cancelled = ?, trace = ? WHERE message_id = ?"
                " AND number = (SELECT version FROM messages WHERE id = ?)",
                (*values, message_id, message_id),
            )

    def restore_shown_version(self, message_id: int) -> None:
        """A regeneration stopped before any text: the reply goes back to the version shown before it."""
        row = self._db.execute("SELECT version FROM messages WHERE id = ?", (message_id,)).fetchone()
        if row is not None:
            self.select_version(message_id, row["version"])

    def _record_version(self, message_id: int) -> None:
        """Inside finish_reply's transaction: a regenerated reply's final row becomes its newest version."""
        count = self._version_count(message_id)
        if not count:
            return
        self._db.execute(
            "INSERT INTO reply_versions (message_id, number, content, stats, cancelled, trace, created_at)"
            " SELECT id, ?, content, stats, cancelled, trace, ? FROM messages WHERE id = ?",
            (count, time.time(), message_id),
        )
        self._db.execute("UPDATE messages SET version = ? WHERE id = ?", (count, message_id))

    def _version_count(self, message_id: int) -> int:
        count: int = self._db.execute(
            "SELECT COUNT(*) FROM reply_versions WHERE message_id = ?", (message_id,)
        ).fetchone()[0]
        return count

    def delete_with_reply(self, message_id: int) -> list[int]:
        """Delete a message (a user message takes the reply after it along) in one transaction; the later
        messages move up. Returns the positions deleted (before the move)."""
        message = self._message(message_id)
        if message is None:
            return []
        positions = [message.position]
        if message.role == "user":
            after = self._db.execute(
                "SELECT role FROM messages WHERE conversation_id = ? AND position = ?",
                (message.conversation_id, message.position + 1),
            ).fetchone()
            if after is not None and after["role"] == "assistant":
                positions.append(message.position + 1)
        cid, first, gap = message.conversation_id, positions[0], len(positions)
        with self._changing_messages(cid) as db:  # deleting the first message retitles a derived title
            db.execute(
                "DELETE FROM messages WHERE conversation_id = ? AND position BETWEEN ? AND ?",
                (cid, first, positions[-1]),
            )
            # two steps so no moment holds two rows at one position (UNIQUE(conversation_id, position))
            db.execute(
                "UPDATE messages SET position = -position WHERE conversation_id = ? AND position > ?", (cid, first)
            )
            db.execute(
                "UPDATE messages SET position = -position - ? WHERE conversation_id = ? AND position < 0", (gap, cid)
            )
            self._time_of_last_message(cid)  # a delete is not new activity: the chat keeps its place
        return positions

    def _time_of_last_message(self, conversation_id: int) -> None:
        """Inside a transaction, after a delete: the conversation's time goes back to its last message's (its
        start when none is left), so deleting is not new activity that moves it to the top of the list."""
        self._db.execute(
            "UPDATE conversations SET updated_at = COALESCE("
            "(SELECT MAX(created_at) FROM messages WHERE conversation_id = ?), created_at) WHERE id = ?",
            (conversation_id, conversation_id),
        )


def _loads(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    data: dict[str, Any] = json.loads(text)
    return data
