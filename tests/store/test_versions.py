"""Reply versions kept across regenerate and reopening; deleting a message (and its reply) in one transaction."""

import pytest

from specchat.paths import AppPaths
from specchat.store import ConversationStore

TRACE = {"flags": [0, 3, 2], "rejections": [[3, 1, "x", "y"]]}


@pytest.fixture
def db(tmp_path):
    return AppPaths.under(tmp_path).conversations_db


def _reply(store, conv_id, text, stats, trace=None, cancelled=False):
    row = store.begin_reply(conv_id)
    return store.finish_reply(row.id, text, stats, cancelled, trace)


def test_regenerate_keeps_every_version_with_its_stats_and_trace_across_reopening(db):
    store = ConversationStore(db)
    conv = store.create()
    store.add_message(conv.id, "user", "hi")
    first = _reply(store, conv.id, "one", {"generated_tokens": 1}, TRACE)
    assert first.trace == TRACE and store.versions(first.id) == []  # never regenerated: no copies
    store.begin_regenerate(first.id)
    assert store.messages(conv.id)[1].complete is False and store.messages(conv.id)[1].content == ""
    second = store.finish_reply(first.id, "two", {"generated_tokens": 2}, True, None)
    assert (second.content, second.version, second.cancelled) == ("two", 1, True)
    store.begin_regenerate(first.id)
    third = store.finish_reply(first.id, "three", {"generated_tokens": 3}, False, TRACE)
    assert third.version == 2
    store.select_version(first.id, 0)
    store.close()
    again = ConversationStore(db)
    shown = again.messages(conv.id)[1]
    assert (shown.content, shown.stats, shown.trace, shown.version) == ("one", {"generated_tokens": 1}, TRACE, 0)
    versions = again.versions(shown.id)
    assert [(v.number, v.content, v.stats["generated_tokens"], v.cancelled) for v in versions] == [
        (0, "one", 1, False),
        (1, "two", 2, True),
        (2, "three", 3, False),
    ]
    assert versions[0].trace == TRACE and versions[1].trace is None
    assert [m.content for m in again.messages(conv.id)] == ["hi", "one"]  # history holds the shown version
    again.close()


def test_a_regeneration_stopped_before_any_text_restores_the_shown_version(db):
    store = ConversationStore(db)
    conv = store.create()
    store.add_message(conv.id, "user", "hi")
    reply = _reply(store, conv.id, "one", {"generated_tokens": 1}, TRACE)
    store.begin_regenerate(reply.id)
    store.restore_shown_version(reply.id)
    row = store.messages(conv.id)[1]
    assert (row.content, row.stats, row.trace, row.complete) == ("one", {"generated_tokens": 1}, TRACE, True)
    store.close()


def test_deleting_a_user_message_takes_its_reply_and_closes_the_gap(db):
    store = ConversationStore(db)
    conv = store.create()
    ids = [
        store.add_message(conv.id, role, text).id
        for role, text in (("user", "a"), ("assistant", "A"), ("user", "b"), ("assistant", "B"), ("user", "c"))
    ]
    assert store.delete_with_reply(ids[2]) == [2, 3]
    assert [(m.position, m.content) for m in store.messages(conv.id)] == [(0, "a"), (1, "A"), (2, "c")]
    assert store.delete_with_reply(ids[1]) == [1]  # a reply alone
    assert [(m.position, m.content) for m in store.messages(conv.id)] == [(0, "a"), (1, "c")]
    assert store.add_message(conv.id, "assistant", "C").position == 2
    store.close()


def test_a_failed_delete_changes_nothing(db, monkeypatch):
    store = ConversationStore(db)
    conv = store.create()
    ids = [
        store.add_message(conv.id, role, text).id for role, text in (("user", "a"), ("assistant", "A"), ("user", "b"))
    ]
    store._db.execute(
        "CREATE TRIGGER no_moves BEFORE UPDATE OF position ON messages BEGIN SELECT RAISE(ABORT, 'disk full'); END"
    )
    with pytest.raises(Exception, match="disk full"):
        store.delete_with_reply(ids[0])
    assert [(m.position, m.content) for m in store.messages(conv.id)] == [(0, "a"), (1, "A"), (2, "b")]
    store.close()


def test_row_copy_recovery_keeps_versions_whose_reply_survived(tmp_path):
    import sqlite3

    from specchat.store.recovery import _copy_rows

    source = tmp_path / "old.sqlite3"
    store = ConversationStore(source)
    conv = store.create()
    replies = []
    for text in ("a", "b"):
        store.add_message(conv.id, "user", text)
        reply = _reply(store, conv.id, text.upper(), {"generated_tokens": 1})
        store.begin_regenerate(reply.id)
        store.finish_reply(reply.id, text.upper() * 2, {"generated_tokens": 2}, False, TRACE)
        replies.append(reply.id)
    store.close()
    raw = sqlite3.connect(source)  # foreign keys off: the second reply's row is lost, its versions are not
    raw.execute("DELETE FROM messages WHERE id = ?", (replies[1],))
    raw.commit()
    raw.close()
    fresh = ConversationStore(tmp_path / "new.sqlite3")
    assert _copy_rows(source, fresh) == 1 + 3 + 2  # the conversation, three messages, the first reply's versions
    assert [v.content for v in fresh.versions(replies[0])] == ["A", "AA"] and fresh.versions(replies[1]) == []
    assert fresh.versions(replies[0])[1].trace == TRACE
    fresh.close()


def test_deleting_a_message_keeps_the_conversations_time(db):
    store = ConversationStore(db)
    conv = store.create()
    ids = [store.add_message(conv.id, role, text).id for role, text in (("user", "a"), ("assistant", "A"))]
    store.add_message(conv.id, "user", "b")
    with store._transaction() as tx:  # as if written an hour apart, long ago
        tx.execute("UPDATE conversations SET created_at = 100, updated_at = 400 WHERE id = ?", (conv.id,))
        for n, message_id in enumerate([*ids, ids[-1] + 1]):
            tx.execute("UPDATE messages SET created_at = ? WHERE id = ?", (200 + 100 * n, message_id))
    store.delete_with_reply(ids[-1] + 1)  # the last message: the time is the one before it
    assert store.get(conv.id).updated_at == 300
    stopped = store.begin_reply(conv.id)  # a reply stopped before any text is deleted again
    store.delete_message(stopped.id)
    assert store.get(conv.id).updated_at == 300
    store.delete_with_reply(ids[0])  # nothing left: the time it was started
    assert store.get(conv.id).updated_at == 100
    store.close()
