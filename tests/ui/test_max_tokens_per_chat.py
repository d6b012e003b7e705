"""The Settings panel's Max tokens belongs to the open chat: kept with it, shown again when it is reopened (after a
restart too), and never written to the default in Preferences; a chat without its own follows that default."""

from dataclasses import replace

from specchat.settings import load_settings
from specchat.ui.main_window import MainWindow


def shown(window) -> tuple[int, int]:
    """What the panel shows and what the next reply would use."""
    return window.panel.max_tokens.value(), window.reply_settings()[0].max_tokens


def test_max_tokens_is_kept_per_chat_and_leaves_the_default_alone(qtbot, open_window, paths):
    window = open_window()
    default = window.settings.max_tokens
    store, panel = window.store, window.panel
    window.new_chat()
    assert shown(window) == (default, default)
    assert panel.max_tokens_note.text() == (
        f"Max tokens is the default ({default:,}, Preferences); a change here is kept for this chat only."
    )
    panel.max_tokens.setValue(100)  # a new chat's own, saved with it once it exists
    panel.system_prompt.setPlainText("Be brief.")
    panel.flush()
    first = window.chat.conversation_id
    assert first is not None and store.get(first).max_tokens == 100
    assert (
        panel.max_tokens_note.text() == f"Max tokens is this chat's own; new chats start at {default:,} (Preferences)."
    )
    assert panel.max_tokens.toolTip().startswith("The longest reply in this chat, kept with it.")
    window.new_chat()
    assert shown(window) == (default, default)
    second = store.create("Second").id
    window.chat.open(second)
    assert shown(window) == (default, default) and store.get(second).max_tokens is None
    panel.max_tokens.setValue(300)
    assert store.get(second).max_tokens == 300
    window.chat.open(first)
    assert shown(window) == (100, 100)
    window.chat.open(second)
    assert shown(window) == (300, 300)
    assert window.settings.max_tokens == default  # the default in Preferences is untouched
    window.close()
    assert load_settings(paths).settings.max_tokens == default
    again = MainWindow(paths)
    qtbot.addWidget(again)
    again.chat.open(first)
    assert shown(again) == (100, 100)
    again.chat.open(second)
    assert shown(again) == (300, 300)
    again.close()


def test_a_new_default_from_preferences_shows_only_where_a_chat_has_none_of_its_own(qtbot, open_window):
    window = open_window()
    store, panel = window.store, window.panel
    own = store.create("Own", max_tokens=77).id
    plain = store.create("Plain").id
    window.chat.open(own)
    panel.load(replace(window.settings, max_tokens=1024))  # what applying Preferences does
    assert shown(window) == (77, 77)
    window.chat.open(plain)
    assert shown(window) == (1024, 1024) and "(1,024, Preferences)" in panel.max_tokens_note.text()
    assert store.get(plain).max_tokens is None  # showing the default saves nothing
