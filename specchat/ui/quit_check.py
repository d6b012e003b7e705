"""Asking before quitting while something would be cut off: the in-app server, or a reply streaming."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget


def quit_question(serving: bool, streaming: bool) -> str | None:
    """What quitting would cut off, as a question; None when nothing would be."""
    if serving and streaming:
        return "The local API server is running and a reply is still being written. Quit anyway?"
    if serving:
        return "The local API server is running: quitting stops it, and any client using it loses it. Quit anyway?"
    if streaming:
        return "A reply is still being written: quitting stops it where it is. Quit anyway?"
    return None


def confirm_quit(parent: QWidget, serving: bool, streaming: bool) -> bool:
    """True when nothing would be cut off, or the user chose Quit; False for Cancel (the default)."""
    question = quit_question(serving, streaming)
    if question is None:
        return True
    box = QMessageBox(QMessageBox.Icon.Question, "Quit SpecChat?", question, parent=parent)
    box.setStandardButtons(QMessageBox.StandardButton.Ok | QMessageBox.StandardButton.Cancel)
    quit_button = box.button(QMessageBox.StandardButton.Ok)
    assert quit_button is not None  # set just above
    quit_button.setText("Quit")
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    return box.exec() == QMessageBox.StandardButton.Ok
