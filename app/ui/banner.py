"""A coloured strip at the top of the chat that says what went wrong (or needs attention)."""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton

from app.logs import details_note

from . import theme

log = logging.getLogger(__name__)

LEVELS = {"error": theme.BANNER_ERROR, "warning": theme.BANNER_WARNING, "info": theme.BANNER_INFO}
TITLES = {"error": "Error", "warning": "Note", "info": ""}


class Banner(QFrame):
    """Hidden until show_message(); the user closes it with ×."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.level = ""
        self.message = ""
        row = QHBoxLayout(self)
        row.setContentsMargins(14, 8, 8, 8)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton(text="×")
        close.setAutoRaise(True)
        close.setToolTip("Dismiss")
        close.clicked.connect(self.dismiss)
        row.addWidget(self.label, 1)
        row.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    def show_message(self, message: str, level: str = "error") -> None:
        """Show a message; level is error, warning or info. Errors are logged and name the log file."""
        bg, fg, border = LEVELS[level]
        if level == "error":
            log.error("%s", message)
            if "Details in " not in message:
                message = message.rstrip() + details_note()
        self.level, self.message = level, message
        self.setStyleSheet(f"Banner {{ background: {bg}; border: 1px solid {border}; border-radius: 8px; }}"
                           f" QLabel, QToolButton {{ color: {fg}; background: transparent; border: none; }}")
        title = TITLES[level]
        self.label.setText(f"{title}: {message}" if title else message)
        self.show()

    def dismiss(self) -> None:
        """Hide the banner."""
        self.level = self.message = ""
        self.hide()
