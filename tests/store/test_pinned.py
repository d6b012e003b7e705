"""Pinned chats (schema 6): pinned and unpinned, kept when the file is opened again, gone with their chat;
a version 5 file migrates with every row kept."""

import sqlite3

import pytest

from specchat.store import ConversationStore
from specchat.store.migrations import LATEST_VERSION, MIGRATIONS, migrate, user_version
from specchat.store.pins import is_pinned, pinned_ids, set_pinned


def test_pins_are_kept_when_the_file_is_opened_again(tmp_path):
    store = ConversationStore(tmp_path / "c.sqlite3")
    first, second, third = (store.create(title) for title in ("one", "two", "three"))
    set_pinned(store, first.id, True)
    set_pinned(store, third.id, True)
    set_pinned(store, third.id, True)  # twice: still one pin
    set_pinned(store, second.id, False)  # never pinned: nothing happens
    assert pinned_ids(store) == {first.id, third.id}
    store.close()
    store = ConversationStore(tmp_path / "c.sqlite3")
    assert pinned_ids(store) == {first.id, third.id} and is_pinned(store, first.id)
    set_pinned(store, first.id, False)
    assert pinned_ids(store) == {third.id} and not is_pinned(store, first.id)
    store.close()


def test_pinning_twice_keeps_the_first_time(tmp_path):
    store = ConversationStore(tmp_path / "c.sqlite3")
    chat = store.create("one")
    set_pinned(store, chat.id, True)
    first = store._db.execute("SELECT pinned_at FROM pinned").fetchone()[0]
    set_pinned(store, chat.id, True)
    assert [tuple(row) for row in store._db.execute("SELECT pinned_at FROM pinned")] == [(first,)]
    store.close()


def test_a_deleted_chat_takes_its_pin_and_an_unknown_chat_is_refused(tmp_path):
    store = ConversationStore(tmp_path / "c.sqlite3")
    chat = store.create("one")
    set_pinned(store, chat.id, True)
    store.delete(chat.id)
    assert pinned_ids(store) == set()
    assert store._db.execute("SELECT COUNT(*) FROM pinned").fetchone()[0] == 0
    with pytest.raises(KeyError, match="no conversation with id 99"):
        set_pinned(store, 99, True)
    store.close()


def test_a_version_5_file_migrates_to_6_with_every_row_kept(tmp_path):
    path = tmp_path / "c.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    assert migrate(db, MIGRATIONS[:5]) == 5
    db.execute("INSERT INTO conversations (title, created_at, updated_at) VALUES ('Old', 1, 2)")
    db.execute(
        "INSERT INTO messages (conversation_id, position, role, content, created_at) VALUES (1, 0, 'user', 'hi', 3)"
    )
    db.execute("INSERT INTO chat_settings (conversation_id, preset_id) VALUES (1, 4)")
    tables = ("conversations", "messages", "chat_settings")
    before = [db.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in tables]
    db.close()
    store = ConversationStore(path)
    assert pinned_ids(store) == set() and [m.content for m in store.messages(1)] == ["hi"]
    set_pinned(store, 1, True)
    store.close()
    after = sqlite3.connect(path)
    assert user_version(after) == LATEST_VERSION == 6
    assert [after.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in tables] == before
