"""The conversation store: rows saved, found, renamed, truncated and deleted; WAL on disk."""

import errno
import sqlite3

import pytest

from specchat.paths import AppPaths
from specchat.store import ConversationStore
from specchat.store.errors import is_disk_full, is_locked
from specchat.store.records import DEFAULT_TITLE, title_from


def test_messages_are_saved_in_order_with_stats_and_survive_reopening(tmp_path):
    db = AppPaths.under(tmp_path).conversations_db
    store = ConversationStore(db)
    conv = store.create(system_prompt="Be brief.")
    store.add_message(conv.id, "user", "hi")
    store.add_message(conv.id, "assistant", "hello", {"mode": "draft", "generated_tokens": 3})
    store.add_message(conv.id, "user", "more")
    store.add_message(conv.id, "assistant", "par", None, cancelled=True)
    store.close()
    again = ConversationStore(db)
    rows = again.messages(conv.id)
    assert [(m.position, m.role, m.content, m.cancelled) for m in rows] == [
        (0, "user", "hi", False),
        (1, "assistant", "hello", False),
        (2, "user", "more", False),
        (3, "assistant", "par", True),
    ]
    assert rows[1].stats == {"mode": "draft", "generated_tokens": 3} and rows[3].stats is None
    assert again.get(conv.id).system_prompt == "Be brief."
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    again.close()


def test_list_is_most_recent_first_and_search_matches_titles_and_text(store):
    a = store.create("Sorting lists")
    b = store.create("Weather")
    store.add_message(a.id, "user", "merge two sorted lists")
    store.add_message(b.id, "user", "rain tomorrow?")
    assert [c.id for c in store.conversations()] == [b.id, a.id]
    store.add_message(a.id, "assistant", "use heapq.merge")
    assert [c.id for c in store.conversations()] == [a.id, b.id]
    assert [c.id for c in store.conversations("weather")] == [b.id]
    assert [c.id for c in store.conversations("heapq")] == [a.id]
    assert store.conversations("100%") == []


def test_rename_system_prompt_truncate_delete(store):
    conv = store.create()
    assert conv.title == DEFAULT_TITLE
    store.rename(conv.id, "  Renamed  ")
    assert store.get(conv.id).title == "Renamed"
    with pytest.raises(ValueError, match="cannot be empty"):
        store.rename(conv.id, " ")
    store.set_system_prompt(conv.id, "You are terse.")
    assert store.get(conv.id).system_prompt == "You are terse."
    for i in range(4):
        store.add_message(conv.id, "user" if i % 2 == 0 else "assistant", str(i))
    store.truncate(conv.id, 2)
    assert [m.content for m in store.messages(conv.id)] == ["0", "1"]
    assert store.add_message(conv.id, "user", "again").position == 2
    store.delete(conv.id)
    assert store.conversations() == []
    with pytest.raises(KeyError, match=f"no conversation with id {conv.id}"):
        store.get(conv.id)


def test_bad_input_is_refused_with_a_message(store):
    conv = store.create()
    with pytest.raises(ValueError, match="role must be one of user, assistant, got 'system'"):
        store.add_message(conv.id, "system", "x")
    with pytest.raises(KeyError):
        store.add_message(9999, "user", "x")


def test_title_from_first_line():
    assert title_from("\n  Write a parser\nfor JSON") == "Write a parser"
    assert title_from("x" * 100).endswith("…") and len(title_from("x" * 100)) == 48
    assert title_from("   ") == DEFAULT_TITLE


def test_a_streaming_reply_is_saved_incomplete_then_finished(tmp_path):
    db = AppPaths.under(tmp_path).conversations_db
    store = ConversationStore(db)
    conv = store.create()
    store.add_message(conv.id, "user", "hi")
    row = store.begin_reply(conv.id)
    assert (row.position, row.role, row.content, row.complete) == (1, "assistant", "", False)
    store.update_reply(row.id, "Hel")
    other = ConversationStore(db)  # what a restart after a crash would see
    assert [(m.content, m.complete) for m in other.messages(conv.id)] == [("hi", True), ("Hel", False)]
    other.close()
    done = store.finish_reply(row.id, "Hello", {"generated_tokens": 2}, cancelled=False)
    assert (done.content, done.stats, done.cancelled, done.complete) == ("Hello", {"generated_tokens": 2}, False, True)
    assert store.messages(conv.id)[-1] == done
    store.delete(conv.id)
    assert store.finish_reply(row.id, "late", None, True) is None  # its conversation went while it streamed
    store.close()


def test_edit_and_resend_changes_nothing_when_saving_the_new_message_fails(store):
    conv = store.create()
    for role, text in (("user", "one"), ("assistant", "two"), ("user", "three"), ("assistant", "four")):
        store.add_message(conv.id, role, text)
    store._db.execute("CREATE TRIGGER refuse BEFORE INSERT ON messages BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    with pytest.raises(sqlite3.IntegrityError, match="disk full"):
        store.replace_from(conv.id, 2, "user", "three, edited")  # the DELETE ran; the INSERT failed
    assert [m.content for m in store.messages(conv.id)] == ["one", "two", "three", "four"]
    store._db.execute("DROP TRIGGER refuse")
    edited = store.replace_from(conv.id, 2, "user", "three, edited")
    assert [m.content for m in store.messages(conv.id)] == ["one", "two", "three, edited"] and edited.position == 2


def test_a_database_out_of_pages_is_a_full_disk_and_not_a_lock(store):
    conv = store.create()
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages}")  # the file may not grow: SQLite says SQLITE_FULL
    with pytest.raises(sqlite3.OperationalError) as caught:
        store.add_message(conv.id, "user", "x" * 200_000)
    assert is_disk_full(caught.value) and not is_locked(caught.value)
    assert not store._db.in_transaction and store.messages(conv.id) == []  # SQLite's own rollback stood
    store._db.execute(f"PRAGMA max_page_count = {pages * 1000}")  # space again: the next write goes through
    assert store.add_message(conv.id, "user", "x" * 200_000).position == 0


def test_a_database_held_by_another_connection_is_locked_and_not_full(store):
    other = sqlite3.connect(str(store.path), isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(sqlite3.OperationalError) as caught:
            store.create()
    finally:
        other.close()
    assert is_locked(caught.value) and not is_disk_full(caught.value)


def test_disk_full_goes_by_error_codes_not_by_the_words_of_the_message():
    assert is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert not is_disk_full(OSError(errno.EACCES, "the disk is full of secrets"))
    assert not is_disk_full(sqlite3.OperationalError("table 'full' has no column named x"))  # no SQLite code
    assert not is_disk_full(ValueError("disk full"))
