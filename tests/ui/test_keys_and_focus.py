"""Keys and focus in the window: Esc from anywhere, Cmd+N, Preferences, the send-key setting, Think, Load."""

import json
import shutil

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence

from specchat.settings import load_settings
from specchat.ui.chat.composer import THINKING_TIP
from specchat.ui.model_bar import CHOOSE_TARGET
from specchat.ui.pair_control import NO_THINKING

from .conftest import send

SHIFT = Qt.KeyboardModifier.ShiftModifier


def _activate(qtbot, window):
    window.activateWindow()
    qtbot.waitUntil(lambda: window.isActiveWindow())


@pytest.mark.slow
def test_esc_with_focus_in_the_sidebar_stops_the_streaming_reply(qtbot, open_window, dense_target):
    window = open_window(dense_target, max_tokens=4000)
    _activate(qtbot, window)
    chunks = []

    def on_event(_request_id, event):
        if type(event).__name__ == "TextChunk":
            chunks.append(event)
            if len(chunks) == 3:
                window.sidebar.list.setFocus()
                qtbot.keyClick(window.sidebar.list, Qt.Key.Key_Escape)

    window.client.event.connect(on_event)
    finished = send(qtbot, window, "Tell me a long story.")
    assert not window.composer.hasFocus() and not window.composer.text.hasFocus()
    assert finished.cancelled and 3 <= len(finished.tokens) < 4000


def test_esc_outside_the_composer_leaves_edit_mode(qtbot, open_window, dense_target):
    window = open_window(dense_target)
    _activate(qtbot, window)
    send(qtbot, window, "First question")
    window.composer.begin_edit(0, "First question")
    assert window.composer.editing == 0 and window.composer.cancel_edit.isVisibleTo(window.composer)
    window.panel.temperature.setFocus()
    qtbot.keyClick(window.panel.temperature, Qt.Key.Key_Escape)
    assert window.composer.editing is None
    assert not window.composer.cancel_edit.isVisibleTo(window.composer)


@pytest.mark.slow
def test_cmd_n_starts_a_chat_with_an_empty_system_prompt_and_the_cursor_in_the_composer(
    qtbot, open_window, dense_target
):
    window = open_window(dense_target)
    _activate(qtbot, window)
    window.panel.system_prompt.setPlainText("You are a pirate.")
    window.panel.flush()
    first = window.chat.conversation_id
    assert window.store.get(first).system_prompt == "You are a pirate."
    send(qtbot, window, "Ahoy")
    window.sidebar.list.setFocus()
    assert window.new_action.shortcut() == QKeySequence(QKeySequence.StandardKey.New)
    qtbot.keyClick(window.sidebar.list, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert window.chat.conversation_id is None
    assert window.panel.system_prompt.toPlainText() == ""  # the bug: the previous chat's prompt stayed
    assert window.chat.system_prompt() == ""
    qtbot.waitUntil(lambda: window.composer.text.hasFocus())
    finished = send(qtbot, window, "Hello")
    assert window.chat.conversation_id != first
    assert window.store.get(window.chat.conversation_id).system_prompt == ""
    assert window.store.get(first).system_prompt == "You are a pirate."
    assert finished.text


@pytest.mark.slow
def test_an_unsaved_system_prompt_edit_stays_with_the_chat_it_was_typed_in(qtbot, open_window, dense_target):
    window = open_window(dense_target)
    send(qtbot, window, "Hi")
    first = window.chat.conversation_id
    window.panel.system_prompt.setPlainText("Be brief.")  # its save is still pending (debounced)
    window.new_action.trigger()
    assert window.store.get(first).system_prompt == "Be brief."
    assert window.panel.system_prompt.toPlainText() == "" and window.chat.conversation_id is None


@pytest.mark.slow
def test_preferences_is_a_real_dialog_with_the_macos_menu_role(qtbot, open_window, paths, dense_target):
    window = open_window(dense_target)
    action: QAction = window.preferences.action
    assert action.menuRole() == QAction.MenuRole.PreferencesRole
    assert (
        QKeySequence("Ctrl+,") in action.shortcuts()
        or QKeySequence(QKeySequence.StandardKey.Preferences) in action.shortcuts()
    )
    assert action in window.menuBar().actions()[0].menu().actions()
    action.trigger()
    dialog = window.preferences.dialog
    assert dialog is not None and dialog.isVisible()
    dialog.send_key.setCurrentIndex(dialog.send_key.findData(False))
    dialog.sampling["temperature"].setValue(0.7)
    dialog.theme.setCurrentIndex(dialog.theme.findData("dark"))
    dialog.power.setCurrentIndex(dialog.power.findData("plain_on_battery"))
    dialog.charts["power"].setChecked(False)
    dialog.accept()
    saved = load_settings(paths).settings
    assert (saved.enter_sends, saved.temperature, saved.theme, saved.power_policy) == (
        False,
        0.7,
        "dark",
        "plain_on_battery",
    )
    assert saved.dashboard_charts == ["throughput", "acceptance", "memory"]
    assert window.panel.temperature.value() == 0.7  # the panel shows the new default
    assert window.composer.enter_sends is False
    assert not window.docks.dashboard.power_chart.isVisibleTo(window.docks.dashboard)
    assert window.docks.dashboard.memory_chart.isVisibleTo(window.docks.dashboard)
    # the swapped send key works in the window: Enter is a new line, Shift+Enter sends
    qtbot.keyClicks(window.composer.text, "one")
    qtbot.keyClick(window.composer.text, Qt.Key.Key_Return)
    assert window.chat.conversation_id is None and window.composer.text.toPlainText() == "one\n"
    with qtbot.waitSignal(window.chat.replyFinished, timeout=300_000):
        qtbot.keyClick(window.composer.text, Qt.Key.Key_Return, SHIFT)
    assert window.store.messages(window.chat.conversation_id)[0].content == "one"
    window.preferences.apply({"theme": "light"})


def test_cancel_in_preferences_changes_nothing(qtbot, open_window, paths):
    window = open_window()
    window.preferences.open()
    dialog = window.preferences.dialog
    dialog.send_key.setCurrentIndex(dialog.send_key.findData(False))
    dialog.reject()
    assert window.settings.enter_sends is True and window.composer.enter_sends is True


def test_the_data_folder_is_shown_and_a_new_one_is_used_from_the_next_start(qtbot, open_window, paths, tmp_path):
    window = open_window()
    window.preferences.open()
    dialog = window.preferences.dialog
    assert str(paths.data_dir) in dialog.data_label.text()
    elsewhere = tmp_path / "elsewhere"
    dialog._set_data_dir(str(elsewhere))
    assert "next start" in dialog.data_label.text()
    dialog.accept()
    assert window.paths.data_dir == paths.data_dir  # not this session: the store is open where it was
    window.close()
    again = open_window(at=paths)
    assert again.paths.data_dir == elsewhere
    assert (elsewhere / "conversations.sqlite3").exists()


def _without_thinking_switch(source, destination):
    """A copy of a tiny model whose chat template has no enable_thinking switch."""
    shutil.copytree(source, destination)
    config_file = destination / "tokenizer_config.json"
    config = json.loads(config_file.read_text())
    config["chat_template"] = (
        "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
        "{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
    )
    config_file.write_text(json.dumps(config))
    for extra in ("chat_template.jinja", "chat_template.json"):
        (destination / extra).unlink(missing_ok=True)
    return destination


@pytest.fixture
def no_think_target(dense_target, tmp_path):
    return _without_thinking_switch(dense_target, tmp_path / "no_think")


@pytest.mark.slow
def test_think_is_offered_only_when_the_template_has_the_switch(qtbot, open_window, dense_target, no_think_target):
    window = open_window(dense_target)
    assert window.composer.thinking.isEnabled() and window.composer.thinking.toolTip() == THINKING_TIP
    window.composer.thinking.setChecked(True)
    assert window.reply_settings()[1] is True
    window.load_models(str(no_think_target))
    qtbot.waitUntil(lambda: window.pair.target == str(no_think_target), timeout=300_000)
    assert not window.composer.thinking.isEnabled() and not window.thinking_action.isEnabled()
    assert window.composer.thinking.toolTip() == NO_THINKING
    assert window.reply_settings()[1] is False  # a checked but greyed switch is not sent


def test_load_with_no_target_says_what_to_do(qtbot, open_window):
    window = open_window()
    assert window.model_bar.target_path() is None
    with qtbot.assertNotEmitted(window.model_bar.loadRequested):
        window.model_bar.load_button.click()
    assert window.banner.isVisibleTo(window) and window.banner.level == "warning"
    assert window.banner.message == CHOOSE_TARGET
    assert window.model_bar.state.text() == "Choose a target model first…"
