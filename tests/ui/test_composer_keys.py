"""The composer's keys: Enter sends, Shift+Enter is a new line, and a setting swaps them."""

from PySide6.QtCore import Qt

from specchat.ui.chat.composer import Composer

SHIFT, CTRL = Qt.KeyboardModifier.ShiftModifier, Qt.KeyboardModifier.ControlModifier


def _composer(qtbot) -> Composer:
    composer = Composer()
    qtbot.addWidget(composer)
    composer.set_ready(True)
    composer.show()
    composer.text.setFocus()
    return composer


def test_enter_sends_and_shift_enter_is_a_new_line(qtbot):
    composer = _composer(qtbot)
    qtbot.keyClicks(composer.text, "first line")
    with qtbot.assertNotEmitted(composer.sendRequested):
        qtbot.keyClick(composer.text, Qt.Key.Key_Return, SHIFT)
    qtbot.keyClicks(composer.text, "second")
    assert composer.text.toPlainText() == "first line\nsecond"
    with qtbot.waitSignal(composer.sendRequested) as sent:
        qtbot.keyClick(composer.text, Qt.Key.Key_Return)
    assert sent.args == ["first line\nsecond"]
    with qtbot.waitSignal(composer.sendRequested):
        qtbot.keyClick(composer.text, Qt.Key.Key_Enter, Qt.KeyboardModifier.KeypadModifier)  # keypad Enter too


def test_the_setting_swaps_enter_and_shift_enter(qtbot):
    composer = _composer(qtbot)
    composer.set_enter_sends(False)
    qtbot.keyClicks(composer.text, "a")
    with qtbot.assertNotEmitted(composer.sendRequested):
        qtbot.keyClick(composer.text, Qt.Key.Key_Return)
    qtbot.keyClicks(composer.text, "b")
    assert composer.text.toPlainText() == "a\nb"
    assert "Shift+Enter to send" in composer.text.placeholderText()
    with qtbot.waitSignal(composer.sendRequested) as sent:
        qtbot.keyClick(composer.text, Qt.Key.Key_Return, SHIFT)
    assert sent.args == ["a\nb"]


def test_nothing_is_sent_while_a_reply_streams_or_without_a_model(qtbot):
    composer = _composer(qtbot)
    qtbot.keyClicks(composer.text, "hello")
    composer.set_busy(True)
    with qtbot.assertNotEmitted(composer.sendRequested):
        qtbot.keyClick(composer.text, Qt.Key.Key_Return)
    composer.set_busy(False)
    composer.set_ready(False, "Load a model first")
    with qtbot.assertNotEmitted(composer.sendRequested):
        qtbot.keyClick(composer.text, Qt.Key.Key_Return)
    assert composer.text.toPlainText() == "hello"  # kept for when a model is loaded
