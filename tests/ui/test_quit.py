"""Quitting asks first when the in-app server runs or a reply streams; otherwise it just quits."""

from PySide6.QtWidgets import QMessageBox

from specchat.ui.quit_check import quit_question
from specchat.ui.server_menu import ServerController


def test_the_question_names_what_quitting_cuts_off():
    assert quit_question(False, False) is None
    assert "server is running" in (quit_question(True, False) or "")
    assert "reply is still being written" in (quit_question(False, True) or "")
    both = quit_question(True, True) or ""
    assert "server" in both and "reply" in both


def test_quit_asks_while_the_server_runs_and_cancel_keeps_the_window(qtbot, open_window, monkeypatch):
    serving = {"on": True}
    monkeypatch.setattr(ServerController, "running", property(lambda _self: serving["on"]))
    asked: list[str] = []

    def answer(button):
        def exec_(box):
            asked.append(box.text())
            return button

        monkeypatch.setattr(QMessageBox, "exec", exec_)

    window = open_window()
    answer(QMessageBox.StandardButton.Cancel)
    window.quit_action.trigger()
    assert len(asked) == 1 and "server is running" in asked[0]
    assert window.isVisible()
    answer(QMessageBox.StandardButton.Ok)
    window.quit_action.trigger()
    assert len(asked) == 2 and not window.isVisible()
    serving["on"] = False


def test_quit_with_nothing_running_does_not_ask(qtbot, open_window, monkeypatch):
    monkeypatch.setattr(QMessageBox, "exec", lambda _box: (_ for _ in ()).throw(AssertionError("asked")))
    window = open_window()
    window.quit_action.trigger()
    assert not window.isVisible()
