"""Edit an assistant reply by hand: the same row takes the text, the card says so, Continue is greyed with the
reason, and the next reply's prompt reads the edited text."""

import sqlite3

import pytest

from specchat.engine.loading import load_model
from specchat.engine.owner import engine_jobs
from specchat.engine.prompt import chat_prompt_ids
from specchat.ui.chat.continuation import EDITED
from specchat.ui.chat.message_actions import EDIT_REPLY_NOTE
from specchat.ui.chat.transcript import EDITED_NOTE

from .conftest import screenshot, send

QUESTION = "Tell me about the lighthouse."
EDITED_TEXT = "The keeper lit the lamp at dusk.\n\nShips passed safely all night."
NEXT = "What happened in the morning?"


def record_prompts(monkeypatch):
    """Every reply job's (messages, system prompt, thinking, prompt ids), as the engine thread renders them."""
    original = engine_jobs.chat_prompt_ids
    prompts = []

    def recording(tokenizer, messages, system_prompt="", enable_thinking=None, **kwargs):
        ids = original(tokenizer, messages, system_prompt, enable_thinking, **kwargs)
        prompts.append(([dict(m) for m in messages], system_prompt, enable_thinking, ids))
        return ids

    monkeypatch.setattr(engine_jobs, "chat_prompt_ids", recording)
    return prompts


@pytest.mark.slow
def test_an_edited_reply_is_saved_shown_and_read_by_the_next_reply(qtbot, open_window, dense_target, monkeypatch):
    window = open_window(dense_target, max_tokens=8)
    first = send(qtbot, window, QUESTION)
    assert first.stats.stop_reason == "length"  # a reply Continue would take, until it is edited
    card = window.transcript.views[1]
    assert not card.edit_button.isHidden() and card.edit_button.isEnabled()
    reply_id = window.store.messages(window.chat.conversation_id)[1].id
    card.edit_button.click()
    composer = window.composer
    assert composer.editing == 1 and composer.text.toPlainText() == first.text
    assert composer.edit_label.text() == EDIT_REPLY_NOTE and composer.edit_label.isVisible()
    started = []
    window.chat.replyStarted.connect(started.append)
    composer.text.setPlainText(EDITED_TEXT)
    composer.send_button.click()
    assert not started and not window.chat.busy  # nothing is generated
    assert composer.editing is None and composer.text.toPlainText() == ""
    rows = window.store.messages(window.chat.conversation_id)
    assert [(m.id, m.role) for m in rows][1] == (reply_id, "assistant") and len(rows) == 2  # the same row
    assert rows[1].content == EDITED_TEXT and rows[1].edited_by_hand and rows[1].token_ids is None
    assert rows[1].trace is None and rows[1].stats["generated_tokens"] == len(first.tokens)
    assert window.transcript.views[1] is card and card.full_text() == EDITED_TEXT
    assert card.footer.text().endswith(f"· {EDITED_NOTE}") and card.footer.text().startswith("8 tokens")
    assert not card.continue_button.isHidden() and not card.continue_button.isEnabled()
    assert card.continue_button.toolTip() == EDITED and "edited by hand" in EDITED
    refused = []
    window.chat.continueRefused.connect(refused.append)
    window.chat.continue_action.trigger()
    assert refused == [EDITED] and not started
    screenshot(window, "edit_reply_done")

    prompts = record_prompts(monkeypatch)
    send(qtbot, window, NEXT)
    assert len(prompts) == 1
    messages, system_prompt, thinking, ids = prompts[0]
    expected = [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": EDITED_TEXT},
        {"role": "user", "content": NEXT},
    ]
    assert messages == expected
    tokenizer = load_model(dense_target).tokenizer
    assert ids == chat_prompt_ids(tokenizer, expected, system_prompt, thinking)
    assert "Ships passed safely all night." in tokenizer.decode(ids)
    assert first.text not in tokenizer.decode(ids)
    window.close()
    again = open_window()  # the edit and its mark survive a restart
    reopened = again.transcript.views[1]
    assert reopened.full_text() == EDITED_TEXT and reopened.footer.text().endswith(EDITED_NOTE)


def test_cancel_edit_or_sending_the_same_text_leaves_the_reply_as_it_was(qtbot, open_window):
    window = open_window()  # no model: the store, the cards and the composer are all this needs
    chat = saved_chat(window)
    window.chat.open(chat.id)
    before = window.store.messages(chat.id)
    card = window.transcript.views[1]
    card.edit_button.click()
    window.composer.cancel_edit.click()
    assert window.composer.editing is None
    card.edit_button.click()
    window.composer.sendRequested.emit(window.composer.message())  # Send with the text unchanged
    assert window.composer.editing is None and window.store.messages(chat.id) == before
    assert not window.store.messages(chat.id)[1].edited_by_hand
    assert window.store.messages(chat.id)[1].token_ids == [1, 2, 3]  # Continue still can


def test_an_edit_the_file_refuses_is_kept_in_the_box_and_said(qtbot, open_window, monkeypatch):
    window = open_window()
    chat = saved_chat(window)
    window.chat.open(chat.id)
    before = window.store.messages(chat.id)
    said = []
    window.chat.storeFailed.connect(said.append)

    def locked(message_id, content):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(window.store, "edit_reply", locked)
    window.transcript.views[1].edit_button.click()
    window.composer.text.setPlainText("my own words")
    window.composer.sendRequested.emit("my own words")
    assert len(said) == 1 and "database is locked" in said[0] and "kept in the box" in said[0]
    assert window.banner.message == said[0]
    assert window.composer.editing == 1 and window.composer.text.toPlainText() == "my own words"
    assert window.store.messages(chat.id) == before and window.transcript.views[1].full_text() == "Once upon"


def test_a_reply_cut_short_by_a_crash_can_be_edited_and_then_counts_as_finished(qtbot, open_window):
    window = open_window()
    store = window.store
    chat = store.create("Cut short")
    store.add_message(chat.id, "user", "Tell me a story")
    cut = store.begin_reply(chat.id)
    store.update_reply(cut.id, "Once up")  # what a crash leaves
    window.chat.open(chat.id)
    card = window.transcript.views[1]
    assert card.footer.text() == "(interrupted)"
    card.edit_button.click()
    window.composer.sendRequested.emit("Once upon a time, the end.")
    row = store.messages(chat.id)[1]
    assert (row.id, row.content, row.complete, row.edited_by_hand) == (cut.id, "Once upon a time, the end.", True, True)
    assert card.full_text() == "Once upon a time, the end." and card.footer.text() == EDITED_NOTE


def saved_chat(window):
    """A saved chat: a question and a reply cut off at Max tokens (with its token ids)."""
    store = window.store
    chat = store.create("Story")
    store.add_message(chat.id, "user", "Tell me a story")
    reply = store.begin_reply(chat.id)
    stats = {"stop_reason": "length", "generated_tokens": 3, "decode_tokens_per_s": 10.0, "ttft_s": 0.1}
    store.finish_reply(reply.id, "Once upon", stats, False, {"flags": [9], "tokens": [1, 2, 3]})
    return chat
