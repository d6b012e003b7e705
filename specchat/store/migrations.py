"""The conversation schema as ordered migrations; each runs in its own transaction and bumps user_version."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence


def _v1_conversations_and_messages(db: sqlite3.Connection) -> None:
    """The first schema (what every database made before migrations holds at user_version 1)."""
    db.execute("""
        CREATE TABLE IF NOT EXISTS conversations (
            id INTEGER PRIMARY KEY,
            title TEXT NOT NULL,
            system_prompt TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )""")
    db.execute("""
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
        )""")


def _v2_complete_flag(db: sqlite3.Connection) -> None:
    """Replies are saved while they stream: complete = 0 until the reply ends (a crash leaves it 0)."""
    db.execute("ALTER TABLE messages ADD COLUMN complete INTEGER NOT NULL DEFAULT 1")


def _v3_reply_traces_and_versions(db: sqlite3.Connection) -> None:
    """A reply keeps its draft tints and rejection marks (trace, JSON) and every regenerated version of itself:
    the messages row holds the version shown (`version` is its number in reply_versions)."""
    db.execute("ALTER TABLE messages ADD COLUMN trace TEXT")
    db.execute("ALTER TABLE messages ADD COLUMN version INTEGER NOT NULL DEFAULT 0")
    db.execute("""
        CREATE TABLE reply_versions (
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            number INTEGER NOT NULL,
            content TEXT NOT NULL,
            stats TEXT,
            cancelled INTEGER NOT NULL DEFAULT 0,
            trace TEXT,
            created_at REAL NOT NULL,
            PRIMARY KEY (message_id, number)
        )""")


def _v4_max_tokens_per_conversation(db: sqlite3.Connection) -> None:
    """A conversation keeps its own reply length (the Settings panel's Max tokens); NULL: Preferences' default."""
    db.execute("ALTER TABLE conversations ADD COLUMN max_tokens INTEGER")


def _v5_presets_and_chat_settings(db: sqlite3.Connection) -> None:
    """Presets (a saved system prompt and sampling, one of them maybe the default for new chats) and what a chat
    keeps beside its row: the preset it was given, its own sampling while it has one, and the target/draft pair it
    was last replied with. A table of its own, so a conversations row and its readers stay as they were."""
    db.execute("""
        CREATE TABLE presets (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE COLLATE NOCASE,
            system_prompt TEXT NOT NULL DEFAULT '',
            temperature REAL NOT NULL,
            top_p REAL NOT NULL,
            top_k INTEGER NOT NULL,
            min_p REAL NOT NULL,
            max_tokens INTEGER NOT NULL,
            is_default INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL
        )""")
    # preset_id is no foreign key: deleting a preset clears it here itself, and recovery may copy chats alone
    db.execute("""
        CREATE TABLE chat_settings (
            conversation_id INTEGER PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
            preset_id INTEGER,
            sampling TEXT,
            target_path TEXT,
            draft_path TEXT
        )""")


def _v6_pinned_conversations(db: sqlite3.Connection) -> None:
    """Chats the user pinned to the top of the sidebar, with when each was pinned (a table of its own, as in v5)."""
    db.execute("""
        CREATE TABLE pinned (
            conversation_id INTEGER PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
            pinned_at REAL NOT NULL
        )""")


# Append only: never edit or reorder a migration that has shipped. Index i brings a database to version i + 1.
MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _v1_conversations_and_messages,
    _v2_complete_flag,
    _v3_reply_traces_and_versions,
    _v4_max_tokens_per_conversation,
    _v5_presets_and_chat_settings,
    _v6_pinned_conversations,
)
LATEST_VERSION = len(MIGRATIONS)


def user_version(db: sqlite3.Connection) -> int:
    """The schema version stamped in the database file."""
    version: int = db.execute("PRAGMA user_version").fetchone()[0]
    return version


def migrate(db: sqlite3.Connection, migrations: Sequence[Callable[[sqlite3.Connection], None]] = MIGRATIONS) -> int:
    """Run every migration the database lacks, one transaction each; returns the version reached.

    The connection must be in autocommit mode (isolation_level=None) so BEGIN/COMMIT here are the only ones.
    A migration that fails rolls back and leaves the database at the previous version.
    """
    version = user_version(db)
    for number, step in enumerate(migrations, start=1):
        if number <= version:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            step(db)
            db.execute(f"PRAGMA user_version = {number}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        version = number
    return version
