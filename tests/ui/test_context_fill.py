"""How full the context is: the label beside Send reads the exact token count of the prompt the engine builds,
after each message and as the message being written grows."""

import pytest

from specchat.engine.loading import load_model
from specchat.engine.prompt import chat_prompt_ids
from specchat.ui.chat.context_fill import FillCount, PromptParts, byte_bound, fill_words, prompt_tokens

from .conftest import send

WAIT_MS = 60_000


def _thinking(window) -> bool:
    return window.composer.thinking.isChecked() and window.composer.thinking.isEnabled()


@pytest.mark.slow
def test_the_label_reads_the_prompts_exact_token_count(qtbot, open_window, dense_target):
    tokenizer = load_model(dense_target).tokenizer
    window = open_window(dense_target)
    label = window.composer.fill_label
    qtbot.waitUntil(lambda: label.text() == "0 / 32,768 tokens", timeout=WAIT_MS)  # an empty chat
    send(qtbot, window, "Write a function that adds two numbers.")
    history = [m.as_chat() for m in window.store.messages(window.chat.conversation_id)]
    chat = chat_prompt_ids(tokenizer, history, "", _thinking(window), add_generation_prompt=False)
    qtbot.waitUntil(lambda: label.text() == f"{len(chat):,} / 32,768 tokens", timeout=WAIT_MS)
    assert "left for the reply" in label.toolTip()
    window.composer.text.setPlainText("And now subtract them, please.")
    draft = [*history, {"role": "user", "content": "And now subtract them, please."}]
    next_prompt = chat_prompt_ids(tokenizer, draft, "", _thinking(window))  # what Send would have the engine read
    assert len(next_prompt) > len(chat)
    qtbot.waitUntil(lambda: label.text() == f"{len(next_prompt):,} / 32,768 tokens", timeout=WAIT_MS)


def test_the_count_follows_the_system_prompt(qtbot, open_window, dense_target):
    tokenizer = load_model(dense_target).tokenizer
    window = open_window(dense_target)
    send(qtbot, window, "hello")
    window.panel.system_prompt.setPlainText("You answer in one word.")
    window.panel.flush()
    history = [m.as_chat() for m in window.store.messages(window.chat.conversation_id)]
    ids = chat_prompt_ids(tokenizer, history, "You answer in one word.", _thinking(window), add_generation_prompt=False)
    label = window.composer.fill_label
    qtbot.waitUntil(lambda: label.text() == f"{len(ids):,} / 32,768 tokens", timeout=WAIT_MS)


def test_the_byte_bound_is_above_the_real_count(dense_target):
    """Send skips the count when this bound fits: it must never be below what the engine counts."""
    tokenizer = load_model(dense_target).tokenizer
    parts = PromptParts(({"role": "user", "content": "héllo ✓"}, {"role": "assistant", "content": "sure"}), "be brief")
    for message in ("", "x", "日本語のテキスト " * 30, "```\ncode\n```"):
        assert prompt_tokens(tokenizer, parts, message) <= byte_bound(parts, message)


def test_the_words_say_the_fill_and_what_does_not_fit():
    parts = PromptParts()
    assert fill_words(FillCount(parts, "", 1234), 32768) == ("1,234 / 32,768 tokens", "")
    assert fill_words(FillCount(parts, "hi", 40210), 32768) == (
        "40,210 / 32,768 tokens",
        "This message would need 40,210 tokens; the model holds 32,768",
    )
    assert "start a new chat" in fill_words(FillCount(parts, "", 40210), 32768)[1]
    assert fill_words(FillCount(parts, "", 12), None) == ("12 tokens", "")
