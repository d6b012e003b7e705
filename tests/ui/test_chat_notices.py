"""Notices in the chat's banner: a greedy regeneration says it gives the same reply (and offers a
temperature), an export's notice goes with the chat it was said in."""

import pytest

from specchat.store import ConversationStore
from specchat.ui.chat.controller import GREEDY_REGENERATE, REGENERATE_TEMPERATURE

from .conftest import REPLY_TIMEOUT_MS, send


@pytest.mark.slow
def test_regenerate_at_temperature_0_says_it_is_the_same_reply_and_offers_a_temperature(
    qtbot, open_window, dense_target
):
    window = open_window(dense_target)
    window.panel.temperature.setValue(0.0)
    send(qtbot, window, "Name a colour.")
    assert not window.banner.isVisible()
    temperatures = []
    generate = window.client.generate

    def spy(messages, cfg, *args, **kwargs):
        temperatures.append(cfg.temperature)
        return generate(messages, cfg, *args, **kwargs)

    window.client.generate = spy
    with qtbot.waitSignal(window.chat.replyFinished, timeout=REPLY_TIMEOUT_MS):
        window.transcript.views[-1].regenerate_button.click()
    assert window.banner.isVisible() and window.banner.message == GREEDY_REGENERATE
    assert "greedy decoding gives the same reply; raise the temperature" in window.banner.message
    assert window.banner.action_button.isVisible()
    assert window.banner.action_button.text() == f"Regenerate at {REGENERATE_TEMPERATURE:g}"
    with qtbot.waitSignal(window.chat.replyFinished, timeout=REPLY_TIMEOUT_MS):
        window.banner.action_button.click()
    assert temperatures == [0.0, REGENERATE_TEMPERATURE]
    assert not window.banner.isVisible()  # the offer was taken; this regeneration sampled
    assert window.settings.temperature == 0.0 and window.panel.temperature.value() == 0.0  # a one-off
    assert len(window.store.versions(window.store.messages(window.chat.conversation_id)[-1].id)) == 3


def test_the_export_banner_goes_when_another_chat_is_shown(qtbot, open_window, paths, tmp_path):
    store = ConversationStore(paths.conversations_db)
    first, second = store.create("First"), store.create("Second")
    for conv in (first, second):
        store.add_message(conv.id, "user", f"hello from {conv.title}")
    store.close()
    window = open_window()
    window.chat.open(first.id)
    window.chat.actions.ask_path = lambda _parent, _kind, name: str(tmp_path / name)
    window.export_markdown_action.trigger()
    assert window.banner.isVisible() and window.banner.message.startswith("Exported to ")
    window.chat.open(first.id)  # the same chat again (a theme change redraws it): the notice stays
    assert window.banner.isVisible()
    window.chat.open(second.id)
    assert not window.banner.isVisible()
    window.chat.actions.export("json")
    assert window.banner.isVisible()
    window.new_chat()  # Ctrl+N
    assert not window.banner.isVisible()
    window.banner.show_message("Something else", "warning")  # other notices are not the export's to clear
    window.chat.open(first.id)
    assert window.banner.isVisible()
