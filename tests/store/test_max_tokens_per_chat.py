"""A conversation keeps its own Max tokens (schema 4); a continued reply is saved in place, versions included."""

import sqlite3

import pytest

from specchat.store import ConversationStore
from specchat.store.migrations import LATEST_VERSION, MIGRATIONS, migrate, user_version


def make_v3(path):
    """A database as the previous schema (3) left it, with a conversation and a regenerated reply."""
    db = sqlite3.connect(path, isolation_level=None)
    assert migrate(db, MIGRATIONS[:3]) == 3
    db.execute(
        "INSERT INTO conversations (id, title, system_prompt, created_at, updated_at) VALUES (7, 'Old', 'Be kind.', 1, 2)"
    )
    db.execute(
        "INSERT INTO messages (id, conversation_id, position, role, content, created_at, trace, version)"
        " VALUES (1, 7, 0, 'user', 'hi', 1, NULL, 0), (2, 7, 1, 'assistant', 'hello', 2, '{\"flags\": [5]}', 1)"
    )
    db.execute(
        "INSERT INTO reply_versions (message_id, number, content, created_at) VALUES (2, 0, 'hey', 1), (2, 1, 'hello', 2)"
    )
    rows = {t: db.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in ("messages", "reply_versions")}
    db.close()
    return rows


def test_a_schema_3_file_gains_a_null_max_tokens_and_keeps_every_row(tmp_path):
    path = tmp_path / "conversations.sqlite3"
    before = make_v3(path)
    store = ConversationStore(path)
    old = store.get(7)
    assert (old.title, old.system_prompt, old.created_at, old.updated_at, old.max_tokens) == (
        "Old",
        "Be kind.",
        1,
        2,
        None,
    )
    assert [m.content for m in store.messages(7)] == ["hi", "hello"]
    assert store.messages(7)[1].token_ids is None  # saved before replies kept their ids
    store.close()
    db = sqlite3.connect(path)
    assert user_version(db) == LATEST_VERSION == 6
    assert {t: db.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in before} == before
    assert db.execute("SELECT max_tokens FROM conversations").fetchall() == [(None,)]


def test_max_tokens_is_kept_per_conversation_and_survives_reopening(tmp_path):
    path = tmp_path / "c.sqlite3"
    store = ConversationStore(path)
    a = store.create("A", max_tokens=64)
    b = store.create("B")
    assert (store.get(a.id).max_tokens, store.get(b.id).max_tokens) == (64, None)
    store.set_max_tokens(b.id, 1000)
    store.set_max_tokens(a.id, None)  # back to the default
    store.close()
    again = ConversationStore(path)
    assert (again.get(a.id).max_tokens, again.get(b.id).max_tokens) == (None, 1000)
    assert [c.title for c in again.conversations()] == ["B", "A"]  # setting it is not new activity


@pytest.mark.parametrize("bad", [0, -5, 2.5, "64", True])
def test_a_max_tokens_that_is_not_a_whole_positive_number_is_refused_naming_it(bad):
    store = ConversationStore(":memory:")
    chat = store.create("A")
    with pytest.raises(ValueError, match=f"max tokens must be a whole number of at least 1, got {bad!r}"):
        store.set_max_tokens(chat.id, bad)
    with pytest.raises(ValueError, match="max tokens"):
        store.create("B", max_tokens=bad)
    assert store.get(chat.id).max_tokens is None and len(store.conversations()) == 1


def test_a_continued_reply_grows_in_place_and_its_shown_version_with_it():
    store = ConversationStore(":memory:")
    chat = store.create("A")
    store.add_message(chat.id, "user", "hi")
    reply = store.begin_reply(chat.id)
    store.finish_reply(reply.id, "Once", {"stop_reason": "length"}, False, {"flags": [4], "tokens": [1, 2]})
    store.begin_regenerate(reply.id)
    store.finish_reply(reply.id, "Long ago", {"stop_reason": "length"}, False, {"flags": [8], "tokens": [3, 4]})
    assert store.messages(chat.id)[1].token_ids == [3, 4] and len(store.versions(reply.id)) == 2
    store.begin_continue(reply.id)
    assert not store.messages(chat.id)[1].complete
    store.update_reply(reply.id, "Long ago there")
    row = store.finish_continued(reply.id, "Long ago there was", {"stop_reason": "eos"}, False, {"tokens": [3, 4, 5]})
    assert row is not None and row.complete and row.version == 1
    messages = store.messages(chat.id)
    assert [m.role for m in messages] == ["user", "assistant"]  # one assistant message, grown
    assert (messages[1].content, messages[1].stats, messages[1].token_ids) == (
        "Long ago there was",
        {"stop_reason": "eos"},
        [3, 4, 5],
    )
    versions = store.versions(reply.id)
    assert [v.content for v in versions] == ["Once", "Long ago there was"]  # no third version: the same reply
    store.select_version(reply.id, 0)
    store.select_version(reply.id, 1)
    assert store.messages(chat.id)[1].token_ids == [3, 4, 5]
