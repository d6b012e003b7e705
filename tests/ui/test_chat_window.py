"""The main window on tiny models: replies equal the engine's, modes switch, stop saves, restart finds."""

import pytest

from specchat.engine import Engine, GenerationConfig
from specchat.engine.session import ChatSession
from specchat.store import ConversationStore

from .conftest import MAX_TOKENS, screenshot, send


def fresh_reply(target, draft, messages, cfg, system_prompt=None):
    """The same reply from a new Engine, as the reference."""
    engine = Engine.load(target, draft)
    ids = ChatSession(engine, system_prompt).prompt_ids(messages)
    return engine.generate(ids, cfg)


@pytest.mark.slow
def test_a_reply_equals_the_engines_output_and_is_saved(qtbot, open_window, paths, dense_target, dense_draft_partial):
    window = open_window(dense_target, dense_draft_partial)
    assert window.pair.draft and window.speculation.checked_mode() == "draft"
    assert window.transcript.empty.isVisible() and "is ready" in window.transcript.empty.hint.text()
    screenshot(window, "main_window_empty_state")
    finished = send(qtbot, window, "Write a function that adds two numbers.")
    k = window.speculation.current_k
    cfg = GenerationConfig(mode="draft", num_draft_tokens=k, max_tokens=MAX_TOKENS)
    expected = fresh_reply(
        dense_target, dense_draft_partial, [{"role": "user", "content": "Write a function that adds two numbers."}], cfg
    )
    assert list(finished.tokens) == expected.tokens and finished.text == expected.text
    assert window.chat.last_trace.tokens == expected.tokens and window.chat.last_trace.text == expected.text
    rows = window.store.messages(window.chat.conversation_id)
    assert [(m.role, m.content) for m in rows] == [
        ("user", "Write a function that adds two numbers."),
        ("assistant", expected.text),
    ]
    assert rows[1].stats["mode"] == "draft" and rows[1].stats["num_draft_tokens"] == k
    reply = window.transcript.views[-1]
    assert reply.footer.text().startswith(f"{MAX_TOKENS} tokens") and f"K={k}" in reply.footer.text()
    assert reply.footer.text().endswith(f" · max tokens ({MAX_TOKENS})") and reply.footer.toolTip()
    assert window.sidebar.ids() == [window.chat.conversation_id]
    assert (
        "untinted: the target's own token" in window.legend.text()
        and "one untinted token per round" in window.legend.toolTip()
    )
    screenshot(window, "main_window_tiny_reply")


@pytest.mark.slow
def test_modes_switch_through_the_menu_and_the_next_reply_uses_them(
    qtbot, open_window, dense_target, dense_draft_partial
):
    window = open_window(dense_target, dense_draft_partial)
    mtp = window.speculation.mode_actions["mtp"]
    assert not mtp.isEnabled() and mtp.toolTip().startswith("Unavailable: ")
    window.speculation.mode_actions["baseline"].trigger()
    first = send(qtbot, window, "hello")
    assert (first.stats.mode, first.stats.rounds) == ("baseline", 0)
    window.speculation.mode_actions["draft"].trigger()
    window.speculation.k_actions[2].trigger()
    second = send(qtbot, window, "again")
    assert (second.stats.mode, second.stats.num_draft_tokens) == ("draft", 2) and second.stats.rounds > 0
    assert (window.settings.mode, window.settings.num_draft_tokens) == ("draft", 2)
    assert "K=2" in window.transcript.views[-1].footer.text()


def test_stop_mid_reply_saves_the_partial_reply(qtbot, open_window, dense_target):
    window = open_window(dense_target, max_tokens=4000)
    chunks = []

    def on_event(_request_id, event):
        if type(event).__name__ == "TextChunk":
            chunks.append(event)
            if len(chunks) == 3:
                window.composer.stop_button.click()

    window.client.event.connect(on_event)
    finished = send(qtbot, window, "Tell me a long story.")
    assert finished.cancelled and 3 <= len(finished.tokens) < 4000
    saved = window.store.messages(window.chat.conversation_id)[-1]
    assert (saved.role, saved.content, saved.cancelled) == ("assistant", finished.text, True)
    assert window.transcript.views[-1].footer.text().endswith(" · stopped by you")
    assert window.composer.send_button.isVisible()


@pytest.mark.slow
def test_restarting_the_window_finds_the_conversation_and_settings(qtbot, open_window, paths, dense_target):
    window = open_window(dense_target)
    window.speculation.k_actions[6].trigger()
    finished = send(qtbot, window, "Remember me")
    conv_id = window.chat.conversation_id
    window.close()
    again = open_window()  # no target given: the saved one is loaded
    assert again.settings.target_path == str(dense_target.resolve())
    assert again.sidebar.ids() == [conv_id] and again.chat.conversation_id == conv_id
    assert [v.role for v in again.transcript.views] == ["user", "assistant"]
    assert again.transcript.views[1].text == finished.text
    assert again.speculation.current_k == 6
    assert again.pair is not None


@pytest.mark.slow
def test_edit_and_regenerate_replace_the_tail(qtbot, open_window, dense_target):
    window = open_window(dense_target)
    send(qtbot, window, "first question")
    send(qtbot, window, "second question")
    window.transcript.views[0].edit_button.click()
    assert window.composer.editing == 0 and window.composer.text.toPlainText() == "first question"
    edited = send(qtbot, window, "a different first question")
    rows = window.store.messages(window.chat.conversation_id)
    assert [m.content for m in rows] == ["a different first question", edited.text]
    cfg = GenerationConfig(max_tokens=MAX_TOKENS)
    assert list(edited.tokens) == fresh_reply(dense_target, None, [rows[0].as_chat()], cfg).tokens
    with qtbot.waitSignal(window.chat.replyFinished, timeout=300_000) as blocker:
        window.transcript.views[-1].regenerate_button.click()
    assert blocker.args[0].tokens == edited.tokens  # greedy: the same reply again
    assert len(window.store.messages(window.chat.conversation_id)) == 2
    again = blocker.args[0].stats  # the engine kept the prompt cached: only the last token is fed again
    assert again.cached_prompt_tokens == again.prompt_tokens - 1 > edited.stats.cached_prompt_tokens


@pytest.mark.slow
def test_system_prompt_is_per_conversation_and_used(qtbot, open_window, dense_target):
    window = open_window(dense_target)
    window.panel.system_prompt.setPlainText("Answer in one word.")
    finished = send(qtbot, window, "hi")
    conv = window.store.get(window.chat.conversation_id)
    assert conv.system_prompt == "Answer in one word."
    expected = fresh_reply(
        dense_target,
        None,
        [{"role": "user", "content": "hi"}],
        GenerationConfig(max_tokens=MAX_TOKENS),
        "Answer in one word.",
    )
    assert list(finished.tokens) == expected.tokens
    window.sidebar.new_button.click()
    assert window.panel.system_prompt.toPlainText() == "" and window.transcript.views == []


@pytest.mark.slow
def test_conversations_can_be_searched_renamed_and_deleted(qtbot, open_window, dense_target):
    window = open_window(dense_target)
    send(qtbot, window, "apples and pears")
    first = window.chat.conversation_id
    window.sidebar.new_button.click()
    send(qtbot, window, "bananas")
    second = window.chat.conversation_id
    assert window.sidebar.ids() == [second, first]
    window.sidebar.search.setText("apples")
    assert window.sidebar.ids() == [first]
    window.sidebar.search.setText("")
    window.sidebar.rename(first, "Fruit")
    assert window.sidebar.rows()[2].startswith("Fruit · ")  # [Today, second, Fruit]
    window.sidebar.delete(second)
    assert window.sidebar.ids() == [first] and window.transcript.views == []
    assert ConversationStore(window.paths.conversations_db).conversations()[0].title == "Fruit"
