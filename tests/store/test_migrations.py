"""Schema migrations: ordered, one transaction each, user_version bumped; today's files open unchanged."""

import shutil
import sqlite3
from pathlib import Path

import pytest

from specchat.store import ConversationStore
from specchat.store.migrations import LATEST_VERSION, MIGRATIONS, migrate, user_version

V1_FILE = Path(__file__).parent / "data" / "conversations-v1.sqlite3"  # made by the store before migrations


def columns(db, table):
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def test_a_database_made_before_migrations_opens_with_every_row_unchanged(tmp_path):
    path = tmp_path / "conversations.sqlite3"
    shutil.copy(V1_FILE, path)
    before = sqlite3.connect(path)
    assert user_version(before) == 1 and "complete" not in columns(before, "messages")
    old_rows = before.execute(
        "SELECT id, conversation_id, position, role, content, stats, cancelled, created_at FROM messages ORDER BY id"
    ).fetchall()
    old_convs = before.execute("SELECT * FROM conversations ORDER BY id").fetchall()
    before.close()
    store = ConversationStore(path)
    fruit, second = sorted(store.conversations(), key=lambda c: c.id)
    assert (fruit.title, fruit.system_prompt, second.title) == ("Fruit questions", "Be brief.", "Second chat")
    rows = store.messages(fruit.id)
    assert [(m.role, m.content, m.cancelled, m.complete) for m in rows] == [
        ("user", "Name a red fruit.", False, True),
        ("assistant", "A **strawberry**.", False, True),
        ("user", "And a yellow one?", False, True),
        ("assistant", "A ban", True, True),
    ]
    assert rows[1].stats == {"tokens": 4, "tokens_per_second": 12.5, "mode": "draft"}
    assert [m.content for m in store.messages(second.id)] == ["héllo ✓ 100%_done", "Hi!"]
    store.close()
    after = sqlite3.connect(path)
    assert user_version(after) == LATEST_VERSION == 6
    assert (
        after.execute(
            "SELECT id, conversation_id, position, role, content, stats, cancelled, created_at"
            " FROM messages ORDER BY id"
        ).fetchall()
        == old_rows
    )
    conv_columns = "id, title, system_prompt, created_at, updated_at"  # max_tokens (v4) is new: NULL
    assert after.execute(f"SELECT {conv_columns} FROM conversations ORDER BY id").fetchall() == old_convs


def test_each_migration_bumps_user_version_in_order(tmp_path):
    db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    assert migrate(db, MIGRATIONS[:1]) == 1 and user_version(db) == 1
    assert "complete" not in columns(db, "messages")
    assert migrate(db, MIGRATIONS[:2]) == 2 and user_version(db) == 2 and "complete" in columns(db, "messages")
    assert migrate(db) == 6 and "trace" in columns(db, "messages") and columns(db, "reply_versions")
    assert migrate(db) == 6  # nothing left to run


def test_a_failing_migration_leaves_the_previous_version_intact(tmp_path):
    db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    migrate(db, MIGRATIONS[:1])
    db.execute("INSERT INTO conversations (title, created_at, updated_at) VALUES ('kept', 0, 0)")

    def half_done(con):
        con.execute("ALTER TABLE messages ADD COLUMN complete INTEGER NOT NULL DEFAULT 1")
        con.execute("DELETE FROM conversations")
        raise RuntimeError("disk full halfway")

    with pytest.raises(RuntimeError, match="halfway"):
        migrate(db, (MIGRATIONS[0], half_done))
    assert user_version(db) == 1 and "complete" not in columns(db, "messages")
    assert db.execute("SELECT title FROM conversations").fetchall() == [("kept",)]
    assert not db.in_transaction
