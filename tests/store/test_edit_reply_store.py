"""A reply edited by hand: its row and its shown version take the new text, say so, and lose the token trace."""

import pytest

from specchat.paths import AppPaths
from specchat.store import ConversationStore
from specchat.store.versions import EDITED_BY_HAND

TRACE = {"flags": [0, 3], "rejections": [[1, 0, "a", "b"]], "tokens": [5, 6, 7]}
STATS = {"generated_tokens": 3, "stop_reason": "length"}


@pytest.fixture
def db(tmp_path):
    return AppPaths.under(tmp_path).conversations_db


def test_an_edited_reply_is_saved_in_place_and_says_so_after_reopening(db):
    store = ConversationStore(db)
    conv = store.create()
    store.add_message(conv.id, "user", "hi")
    reply = store.begin_reply(conv.id)
    store.finish_reply(reply.id, "Hello there", STATS, False, TRACE)
    edited = store.edit_reply(reply.id, "Hello, friend")
    assert (edited.id, edited.position, edited.content, edited.trace, edited.token_ids) == (
        reply.id,
        1,
        "Hello, friend",
        None,
        None,
    )
    assert edited.stats == {**STATS, EDITED_BY_HAND: True} and edited.edited_by_hand
    store.close()
    again = ConversationStore(db)
    assert [(m.role, m.content, m.edited_by_hand) for m in again.messages(conv.id)] == [
        ("user", "hi", False),
        ("assistant", "Hello, friend", True),
    ]


def test_editing_a_regenerated_reply_changes_the_version_shown_only(db):
    store = ConversationStore(db)
    conv = store.create()
    store.add_message(conv.id, "user", "hi")
    reply = store.begin_reply(conv.id)
    store.finish_reply(reply.id, "one", STATS, False, TRACE)
    store.begin_regenerate(reply.id)
    store.finish_reply(reply.id, "two", STATS, False, TRACE)
    store.select_version(reply.id, 0)
    store.edit_reply(reply.id, "one, by hand")
    versions = store.versions(reply.id)
    assert [(v.content, v.trace, bool((v.stats or {}).get(EDITED_BY_HAND))) for v in versions] == [
        ("one, by hand", None, True),
        ("two", TRACE, False),
    ]
    store.select_version(reply.id, 1)
    store.select_version(reply.id, 0)  # flipping back shows the edited text, still marked
    shown = store.messages(conv.id)[1]
    assert shown.content == "one, by hand" and shown.edited_by_hand


def test_only_a_reply_can_be_edited_and_one_cut_short_by_a_crash_then_counts_as_finished(db):
    store = ConversationStore(db)
    conv = store.create()
    user = store.add_message(conv.id, "user", "hi")
    with pytest.raises(ValueError, match=f"message {user.id} is a user message"):
        store.edit_reply(user.id, "changed")
    with pytest.raises(KeyError, match="no message with id 999"):
        store.edit_reply(999, "changed")
    cut = store.begin_reply(conv.id)
    store.update_reply(cut.id, "Once up")  # what a crash leaves: saved text, never finished
    store.close()
    store = ConversationStore(db)
    edited = store.edit_reply(cut.id, "Once upon a time.")
    assert (edited.content, edited.complete, edited.stats) == ("Once upon a time.", True, {EDITED_BY_HAND: True})
    assert [m.content for m in store.messages(conv.id)] == ["hi", "Once upon a time."]
