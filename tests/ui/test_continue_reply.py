"""Continue a reply cut off at Max tokens: the same message grows, exactly as one longer greedy reply; offered only
on the last reply that ended by length, greyed with the reason elsewhere; the same from the keyboard."""

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from specchat.engine import GenerationConfig
from specchat.store import StoredMessage
from specchat.ui.chat.continuation import (
    BUSY,
    CONTEXT_WAS_FULL,
    CONTINUE_TIP,
    ENDED,
    INTERRUPTED,
    NO_REPLY,
    NO_TOKENS,
    NOT_LAST,
    continued_stats,
    why_not_continued,
)

from .conftest import REPLY_TIMEOUT_MS, screenshot, send
from .test_chat_window import fresh_reply

FIRST, MORE = 10, 14
QUESTION = "Tell me a story about a lighthouse."


def continue_by(qtbot, window, press):
    """Continue the last reply with `press` (a click or a key) and return the Finished event."""
    with qtbot.waitSignal(window.chat.replyFinished, timeout=REPLY_TIMEOUT_MS) as blocker:
        press()
    return blocker.args[0]


@pytest.mark.slow
def test_continue_equals_one_longer_greedy_reply_and_keeps_one_message(qtbot, open_window, dense_target):
    window = open_window(dense_target, max_tokens=FIRST)
    first = send(qtbot, window, QUESTION)
    assert first.stats.stop_reason == "length" and len(first.tokens) == FIRST
    assert window.store.get(window.chat.conversation_id).max_tokens == FIRST  # set before the chat existed
    card = window.transcript.views[-1]
    button = card.continue_button
    assert not button.isHidden() and button.isEnabled() and button.toolTip() == CONTINUE_TIP
    screenshot(window, "continue_offered")
    window.panel.max_tokens.setValue(MORE)  # Continue writes up to Max tokens more
    more = continue_by(qtbot, window, button.click)
    expected = fresh_reply(
        dense_target, None, [{"role": "user", "content": QUESTION}], GenerationConfig(max_tokens=FIRST + MORE)
    )
    assert len(expected.tokens) == FIRST + MORE  # the tiny model does not end its turn this early
    assert list(first.tokens) + list(more.tokens) == expected.tokens
    rows = window.store.messages(window.chat.conversation_id)
    assert [m.role for m in rows] == ["user", "assistant"]  # the same message grew
    reply = rows[1]
    assert reply.content == expected.text and reply.token_ids == expected.tokens and reply.complete
    assert reply.stats["generated_tokens"] == FIRST + MORE and reply.stats["stop_reason"] == "length"
    assert reply.stats["max_tokens"] == FIRST + MORE  # as if the budget had been larger
    assert window.transcript.views[-1] is card and card.full_text() == expected.text
    assert (
        card.footer.text().startswith(f"{FIRST + MORE} tokens") and f"max tokens ({FIRST + MORE})" in card.footer.text()
    )
    assert [v.role for v in window.transcript.views] == ["user", "assistant"]
    screenshot(window, "continue_done")
    window.close()
    again = open_window()  # saved as one message, offered again after a restart
    assert again.transcript.views[-1].full_text() == expected.text
    assert again.transcript.views[-1].continue_button.isEnabled()


@pytest.mark.slow
def test_continue_from_the_keyboard_and_greyed_with_the_reason_elsewhere(qtbot, open_window, dense_target):
    window = open_window(dense_target, max_tokens=6)
    send(qtbot, window, "first")
    second = send(qtbot, window, "second")
    earlier, last = window.transcript.views[1], window.transcript.views[3]
    assert not earlier.continue_button.isHidden() and not earlier.continue_button.isEnabled()
    assert earlier.continue_button.toolTip() == NOT_LAST
    assert last.continue_button.isEnabled()
    refused = []
    window.chat.continueRefused.connect(refused.append)
    window.activateWindow()
    more = continue_by(
        qtbot,
        window,
        lambda: QTest.keyClick(
            window, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
        ),
    )
    assert not refused and len(more.tokens) == 6
    rows = window.store.messages(window.chat.conversation_id)
    assert len(rows) == 4 and rows[3].token_ids == list(second.tokens) + list(more.tokens)
    assert rows[3].stats["generated_tokens"] == 12


def test_while_a_reply_streams_continue_is_greyed_and_the_key_says_why(qtbot, open_window, dense_target):
    window = open_window(dense_target, max_tokens=4000)
    refused = []
    window.chat.continueRefused.connect(refused.append)
    window.composer.text.setPlainText("go on for a while")
    window.composer.send_button.click()
    assert window.chat.busy
    window.chat.continue_action.trigger()
    assert refused == [BUSY] and window.banner.message == BUSY
    qtbot.waitUntil(lambda: len(window.chat.active.trace.tokens) >= 3, timeout=REPLY_TIMEOUT_MS)
    streaming = window.transcript.views[-1].continue_button
    assert streaming.isHidden() or not streaming.isEnabled()
    with qtbot.waitSignal(window.chat.replyFinished, timeout=REPLY_TIMEOUT_MS):
        window.chat.stop()
    last = window.transcript.views[-1]  # stopped by the user: nothing to continue, and the card says why
    assert not last.continue_button.isHidden() and not last.continue_button.isEnabled()
    assert last.continue_button.toolTip().startswith("You stopped this reply")


def test_a_reply_saved_without_its_token_ids_is_not_continued(qtbot, open_window, paths):
    window = open_window()
    store = window.store
    chat = store.create("Old chat")
    store.add_message(chat.id, "user", "hi")
    reply = store.begin_reply(chat.id)
    store.finish_reply(reply.id, "Once upon", {"stop_reason": "length", "generated_tokens": 3}, False, {"flags": [9]})
    window.chat.open(chat.id)
    button = window.transcript.views[-1].continue_button
    assert not button.isHidden() and not button.isEnabled() and button.toolTip() == NO_TOKENS
    refused = []
    window.chat.continueRefused.connect(refused.append)
    window.chat.continue_action.trigger()
    assert refused == [NO_TOKENS] and [m.content for m in store.messages(chat.id)] == ["hi", "Once upon"]


def reply(stats, cancelled=False, complete=True, tokens=(1, 2)):
    trace = {"flags": [3], "tokens": list(tokens)} if tokens is not None else {"flags": [3]}
    return StoredMessage(1, 1, 1, "assistant", "abc", stats, cancelled, complete=complete, trace=trace)


@pytest.mark.parametrize(
    ("message", "last", "busy", "why"),
    [
        (reply({"stop_reason": "length"}), True, False, None),
        (reply({"stop_reason": "length", "max_tokens": 8, "generated_tokens": 8}), True, False, None),
        (reply({"stop_reason": "length", "max_tokens": 8, "generated_tokens": 5}), True, False, CONTEXT_WAS_FULL),
        (reply({"stop_reason": "length"}), True, True, BUSY),
        (reply({"stop_reason": "length"}), False, False, NOT_LAST),
        (reply({"stop_reason": "length"}, complete=False), True, False, INTERRUPTED),
        (reply({"stop_reason": "interrupted"}, cancelled=True), True, False, INTERRUPTED),
        (reply({"stop_reason": "eos"}), True, False, ENDED["eos"]),
        (reply({"stop_reason": "cancelled"}, cancelled=True), True, False, ENDED["cancelled"]),
        (reply({"stop_reason": "length"}, cancelled=True), True, False, ENDED["cancelled"]),
        (reply({"stop_reason": "error", "error": "boom"}, cancelled=True), True, False, ENDED["error"]),
        (reply({"stop_reason": "length"}, tokens=None), True, False, NO_TOKENS),
        (reply(None), True, False, NO_REPLY),
        (None, True, False, NO_REPLY),
    ],
)
def test_why_a_reply_is_not_continued(message, last, busy, why):
    assert why_not_continued(message, last, busy) == why


def test_continued_stats_count_the_whole_reply_and_its_whole_budget():
    before = {"generated_tokens": 10, "max_tokens": 10, "stop_reason": "length", "decode_tokens_per_s": 5.0}
    after = {"generated_tokens": 6, "max_tokens": 14, "stop_reason": "eos", "decode_tokens_per_s": 7.0}
    merged = continued_stats(before, after)
    assert merged == {**after, "generated_tokens": 16, "max_tokens": 24}
    assert continued_stats(before, {"stop_reason": "error", "error": "boom"}) == {
        "stop_reason": "error",
        "error": "boom",
    }
