"""Branch from here: every card offers it; the new chat holds copies of the messages up to that one, with the
chat's system prompt and Max tokens, is selected in the sidebar and opened; the original stays as it was."""

import pytest

from specchat.ui.chat.message_view import BRANCH_TEXT

from .conftest import REPLY_TIMEOUT_MS, screenshot, send


def saved_chat(window):
    """A saved chat of four messages with its own system prompt and Max tokens."""
    store = window.store
    chat = store.create("Harbour", system_prompt="Answer like a sailor.", max_tokens=77)
    for role, text in [("user", "Where is the harbour?"), ("assistant", "Past the lighthouse."),
                       ("user", "And the inn?"), ("assistant", "By the quay.")]:  # fmt: skip
        store.add_message(chat.id, role, text)
    return chat


def test_every_card_offers_branch_and_the_branch_opens_selected(qtbot, open_window):
    window = open_window()  # no model: branching is the store's and the views' work
    chat = saved_chat(window)
    window.sidebar.selected.emit(chat.id)  # as a click in the list
    original = window.store.messages(chat.id)
    cards = window.transcript.views
    assert [c.branch_button.text() for c in cards] == [BRANCH_TEXT] * 4
    assert all(not c.branch_button.isHidden() and c.branch_button.isEnabled() for c in cards)
    switched = []
    window.chat.conversationSwitched.connect(switched.append)
    cards[1].branch_button.click()  # from the first reply
    branch_id = window.chat.conversation_id
    assert branch_id not in (None, chat.id) and switched == [branch_id]
    assert window.sidebar.current_id() == branch_id
    assert window.sidebar.list.currentItem().text() == "Harbour (branch)"
    assert window.store.get(branch_id).title == "Harbour (branch)"
    copied = window.store.messages(branch_id)
    assert [(m.role, m.content) for m in copied] == [(m.role, m.content) for m in original[:2]]
    assert not {m.id for m in copied} & {m.id for m in original}
    assert [v.full_text() for v in window.transcript.views] == ["Where is the harbour?", "Past the lighthouse."]
    assert [v.message_id for v in window.transcript.views] == [m.id for m in copied]
    assert window.panel.system_prompt.toPlainText() == "Answer like a sailor."
    assert window.panel.max_tokens.value() == 77
    assert window.store.messages(chat.id) == original and window.store.get(chat.id).title == "Harbour"
    screenshot(window, "branch_opened")


@pytest.mark.slow
def test_a_branch_from_a_user_message_and_a_reply_written_in_it(qtbot, open_window, dense_target):
    window = open_window(dense_target)
    send(qtbot, window, "first question")
    send(qtbot, window, "second question")
    chat_id = window.chat.conversation_id
    original = window.store.messages(chat_id)
    window.composer.text.setPlainText("a long one")
    window.composer.send_button.click()  # while a reply is written, no card branches
    assert window.chat.busy
    assert not any(v.branch_button.isEnabled() for v in window.transcript.views)
    with qtbot.waitSignal(window.chat.replyFinished, timeout=REPLY_TIMEOUT_MS):
        window.chat.stop()
    original = window.store.messages(chat_id)
    window.transcript.views[2].branch_button.click()  # the second question, without its reply
    branch_id = window.chat.conversation_id
    assert branch_id != chat_id
    assert [(m.role, m.content) for m in window.store.messages(branch_id)] == [
        (m.role, m.content) for m in original[:3]
    ]
    finished = send(qtbot, window, "third question")  # the branch goes on by itself
    rows = window.store.messages(branch_id)
    assert [m.role for m in rows] == ["user", "assistant", "user", "user", "assistant"]
    assert rows[-1].content == finished.text
    assert window.store.messages(chat_id) == original  # the original is untouched
