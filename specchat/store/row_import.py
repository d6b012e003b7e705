"""Rows copied in from a damaged store file (recovery.py reads them out); mixed into ConversationStore. No Qt."""

from __future__ import annotations

import sqlite3
import time
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

# what recovery may copy into a new store, parents first: messages need their conversation, settings their preset
RECOVERABLE_TABLES = ("presets", "conversations", "messages", "reply_versions", "chat_settings", "pinned")
OWNED_ROWS = {  # table: (its column naming the row it belongs to, that row's table)
    "reply_versions": ("message_id", "messages"),
    "chat_settings": ("conversation_id", "conversations"),
    "pinned": ("conversation_id", "conversations"),
}


class RowImportMixin:
    """Importing recovered rows; the host class provides _db and _transaction()."""

    _db: sqlite3.Connection

    if TYPE_CHECKING:  # provided by the host class (ConversationStore)

        def _transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...

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
