"""A coloured strip at the top of the chat that says what went wrong (or needs attention), in plain
words; the technical detail, when there is one, sits behind a "Details" toggle."""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QVBoxLayout

from specchat.logs import details_note

from . import theme
from .theme_switch import follow

log = logging.getLogger(__name__)

LEVELS = {"error": "BANNER_ERROR", "warning": "BANNER_WARNING", "info": "BANNER_INFO"}  # theme colour names
TITLES = {"error": "Error", "warning": "Note", "info": ""}


class Banner(QFrame):
    """Hidden until show_message(); the user closes it with ×."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.level = ""
        self.message = ""
        self.details = ""
        row = QHBoxLayout(self)
        row.setContentsMargins(14, 8, 8, 8)
        column = QVBoxLayout()
        column.setSpacing(4)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details_label = QLabel(objectName="bannerDetails")  # type: ignore[call-overload]
        self.details_label.setWordWrap(True)
        self.details_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details_label.hide()
        column.addWidget(self.label)
        column.addWidget(self.details_label)
        self.details_button = QToolButton(text="Details", checkable=True)  # type: ignore[call-arg]
        self.details_button.setAutoRaise(True)
        self.details_button.setToolTip("Show the technical detail")
        self.details_button.toggled.connect(self.details_label.setVisible)
        self.action_button = QToolButton(objectName="bannerAction")  # type: ignore[call-arg]
        # an offer that goes with the message ("Regenerate at 0.7")
        self.action_button.setAutoRaise(True)
        self.action_button.clicked.connect(self._act)
        self.action_button.hide()
        self._action: Callable[[], None] | None = None
        close = QToolButton(text="×")  # type: ignore[call-arg]
        close.setAutoRaise(True)
        close.setToolTip("Dismiss")
        close.clicked.connect(self.dismiss)
        row.addLayout(column, 1)
        row.addWidget(self.action_button, 0, Qt.AlignmentFlag.AlignTop)
        row.addWidget(self.details_button, 0, Qt.AlignmentFlag.AlignTop)
        row.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()
        follow(self, self._restyle)

    def show_message(
        self,
        message: str,
        level: str = "error",
        details: str = "",
        action: tuple[str, Callable[[], None]] | None = None,
    ) -> None:
        """Show a message; level is error, warning or info; details (technical) behind a toggle; action, a
        button's text and what it does (the banner closes first). Errors are logged and name the log file."""
        if level == "error":
            log.error("%s%s", message, f" ({details})" if details else "")
            if "Details in " not in message:
                message = message.rstrip() + details_note()
        self.level, self.message, self.details = level, message, details
        title = TITLES[level]
        self.label.setText(f"{title}: {message}" if title else message)
        self.details_label.setText(details)
        self.details_button.setChecked(False)
        self.details_button.setVisible(bool(details))
        self._action = action[1] if action else None
        self.action_button.setText(action[0] if action else "")
        self.action_button.setVisible(action is not None)
        self._restyle()
        self.show()

    def dismiss(self) -> None:
        """Hide the banner."""
        self.level = self.message = self.details = ""
        self._action = None
        self.action_button.hide()
        self.hide()

    def _act(self) -> None:
        action = self._action
        self.dismiss()
        if action is not None:
            action()

    def _restyle(self) -> None:
        if not self.level:
            return
        bg, fg, border = getattr(theme, LEVELS[self.level])
        self.setStyleSheet(
            f"Banner {{ background: {bg}; border: 1px solid {border}; border-radius: 8px; }}"
            f" QLabel, QToolButton {{ color: {fg}; background: transparent; border: none; }}"
            f" QToolButton:checked {{ text-decoration: underline; }}"
            f" QToolButton#bannerAction {{ text-decoration: underline; font-weight: 600; }}"
            f" QLabel#bannerDetails {{ font-size: 11px; }}"
        )
