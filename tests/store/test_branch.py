"""Branching a conversation copies its messages up to the chosen one into a new conversation; the original stays."""

import sqlite3

import pytest

from specchat.store.branch import branch_title

TRACE = {"flags": [0, 3], "rejections": [], "tokens": [5, 6, 7]}


def _chat(store):
    """A chat of four messages whose first reply was regenerated once (two versions) and has a trace."""
    conv = store.create("Lighthouses", system_prompt="Answer briefly.", max_tokens=77)
    store.add_message(conv.id, "user", "Tell me about lighthouses.")
    reply = store.begin_reply(conv.id)
    store.finish_reply(reply.id, "first take", {"generated_tokens": 2}, False, TRACE)
    store.begin_regenerate(reply.id)
    store.finish_reply(reply.id, "second take", {"generated_tokens": 3, "stop_reason": "length"}, False, TRACE)
    store.add_message(conv.id, "user", "And the keepers?")
    store.add_message(conv.id, "assistant", "They kept the lamps lit.")
    return store.get(conv.id)


def _rows(store, conversation_id):
    return [
        (m.position, m.role, m.content, m.stats, m.cancelled, m.complete, m.trace, m.version)
        for m in store.messages(conversation_id)
    ]


def test_a_branch_copies_the_messages_up_to_the_chosen_one_with_the_chats_settings(store):
    conv = _chat(store)
    before = _rows(store, conv.id)
    original = store.messages(conv.id)
    branch = store.branch(conv.id, original[1].id)  # from the regenerated reply
    assert branch.id != conv.id
    assert branch.title == "Lighthouses (branch)" == branch_title(conv.title)
    assert (branch.system_prompt, branch.max_tokens) == ("Answer briefly.", 77)
    copied = store.messages(branch.id)
    assert [m.id for m in copied] != [m.id for m in original[:2]]
    assert not {m.id for m in copied} & {m.id for m in original}
    assert _rows(store, branch.id) == before[:2]  # roles, texts, order, stats, traces, shown version
    assert copied[1].token_ids == [5, 6, 7]
    assert [v.content for v in store.versions(copied[1].id)] == ["first take", "second take"]
    assert _rows(store, conv.id) == before and store.get(conv.id) == conv  # the original is unchanged
    assert [v.content for v in store.versions(original[1].id)] == ["first take", "second take"]
    assert store.conversations()[0].id == branch.id  # the newest chat: at the top of the list


def test_a_branch_from_the_first_or_the_last_message(store):
    conv = _chat(store)
    original = store.messages(conv.id)
    first = store.branch(conv.id, original[0].id)
    assert [(m.role, m.content) for m in store.messages(first.id)] == [("user", "Tell me about lighthouses.")]
    whole = store.branch(conv.id, original[-1].id)
    assert [(m.role, m.content) for m in store.messages(whole.id)] == [(m.role, m.content) for m in original]
    again = store.branch(whole.id, store.messages(whole.id)[2].id)  # a branch of a branch
    assert again.title == "Lighthouses (branch) (branch)" and len(store.messages(again.id)) == 3


def test_a_branch_keeps_its_title_when_its_first_message_is_edited_and_resent(store):
    conv = _chat(store)
    branch = store.branch(conv.id, store.messages(conv.id)[1].id)
    store.replace_from(branch.id, 0, "user", "Tell me about harbours.")
    assert store.get(branch.id).title == "Lighthouses (branch)"  # a given title, not one made from the message
    assert store.messages(conv.id)[0].content == "Tell me about lighthouses."


def test_deleting_the_branch_leaves_the_original(store):
    conv = _chat(store)
    original = store.messages(conv.id)
    branch = store.branch(conv.id, original[1].id)
    store.delete(branch.id)
    assert store.messages(conv.id) == original and len(store.versions(original[1].id)) == 2


def test_a_message_of_another_conversation_is_refused_by_name(store):
    conv = _chat(store)
    other = store.create("Other")
    stranger = store.add_message(other.id, "user", "hi")
    with pytest.raises(KeyError, match=f"conversation {conv.id} has no message with id {stranger.id}"):
        store.branch(conv.id, stranger.id)
    with pytest.raises(KeyError, match="no message with id 9999"):
        store.branch(conv.id, 9999)
    assert [c.id for c in store.conversations()] == [other.id, conv.id]  # nothing was made


def test_a_branch_that_fails_midway_leaves_nothing_behind(store, monkeypatch):
    conv = _chat(store)
    original = store.messages(conv.id)
    calls = []

    def failing_copy(db, message_id, conversation_id):
        calls.append(message_id)
        if len(calls) == 2:
            raise sqlite3.OperationalError("disk I/O error")
        return type(store)._copy_message(store, db, message_id, conversation_id)

    monkeypatch.setattr(store, "_copy_message", failing_copy)
    with pytest.raises(sqlite3.OperationalError):
        store.branch(conv.id, original[-1].id)
    assert [c.id for c in store.conversations()] == [conv.id]  # one transaction: no half-copied chat
    assert store.messages(conv.id) == original
