"""Switching the theme redraws the open chat and keeps the message being written."""

import pytest

from tests.ui.conftest import send


@pytest.mark.slow
def test_a_theme_switch_keeps_the_typed_text_and_attached_files(qtbot, open_window, dense_target, tmp_path):
    window = open_window(dense_target)
    send(qtbot, window, "hello")
    note = tmp_path / "notes.txt"
    note.write_text("a line\n", encoding="utf-8")
    window.composer.text.setPlainText("half a thought")
    window.composer.add_files([str(note)])
    attached = list(window.composer.tray.attachments)
    assert len(attached) == 1
    window._restyle()  # what a light/dark switch runs: the open chat is shown again in the new colours
    assert window.composer.text.toPlainText() == "half a thought"
    assert list(window.composer.tray.attachments) == attached
    assert len(window.transcript.views) == 2  # the chat was redrawn, not emptied
