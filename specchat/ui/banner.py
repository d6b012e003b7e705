"""Coloured strips at the top of the chat that say what went wrong (or needs attention), in plain words;
the technical detail, when there is one, sits behind a "Details" toggle.

Several can show at once, stacked by importance (errors, then warnings, then notes; the newest first within
a level): a minor note never pushes out a more important message, which stays until it is dismissed."""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from specchat.logs import details_note

from . import theme
from .theme_switch import follow

log = logging.getLogger(__name__)

LEVELS = {"error": "BANNER_ERROR", "warning": "BANNER_WARNING", "info": "BANNER_INFO"}  # theme colour names
TITLES = {"error": "Error", "warning": "Note", "info": ""}
RANKS = {"error": 0, "warning": 1, "info": 2}  # the stack's order, most important first
OBJECT_NAMES = {"error": "bannerError", "warning": "bannerWarning", "info": "bannerInfo"}
MAX_SHOWN = 4  # past this, the least important, oldest message goes


class BannerEntry(QFrame):
    """One message of the stack: its text, the Details toggle, an optional action and ×."""

    def __init__(
        self, level: str, message: str, details: str, action: tuple[str, Callable[[], None]] | None, owner: Banner
    ):
        super().__init__(objectName=OBJECT_NAMES[level])  # type: ignore[call-arg]
        self.level, self.message, self.details, self.owner = level, message, details, owner
        self.kept = False  # True: only the user's × (or a dismiss naming it) removes it
        self._action = action[1] if action else None
        row = QHBoxLayout(self)
        row.setContentsMargins(14, 8, 8, 8)
        column = QVBoxLayout()
        column.setSpacing(4)
        title = TITLES[level]
        self.label = _selectable(f"{title}: {message}" if title else message)
        self.details_label = _selectable(details, "bannerDetails")
        self.details_label.hide()
        column.addWidget(self.label)
        column.addWidget(self.details_label)
        self.details_button = _tool_button("Details", "Show the technical detail", checkable=True)
        self.details_button.toggled.connect(self.details_label.setVisible)
        self.details_button.setVisible(bool(details))
        self.action_button = _tool_button(action[0] if action else "", "", name="bannerAction")
        self.action_button.clicked.connect(self._act)  # an offer that goes with the message ("Regenerate at 0.7")
        self.action_button.setVisible(action is not None)
        close = _tool_button("×", "Dismiss")
        close.clicked.connect(lambda: owner.remove(self))
        row.addLayout(column, 1)
        for button in (self.action_button, self.details_button, close):
            row.addWidget(button, 0, Qt.AlignmentFlag.AlignTop)

    def _act(self) -> None:
        action = self._action
        self.owner.remove(self)
        if action is not None:
            action()


class Banner(QWidget):
    """The stack of messages; hidden while it holds none. level, message, details and the buttons are those
    of the newest message still shown (what a caller that just showed one sees)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.entries: list[BannerEntry] = []  # in the order shown, most important first
        self._newest: list[BannerEntry] = []  # in the order they came, newest last
        self.column = QVBoxLayout(self)
        self.column.setContentsMargins(0, 0, 0, 0)
        self.column.setSpacing(6)
        self._empty = BannerEntry("info", "", "", None, self)  # answers for the buttons while none shows
        self._empty.hide()
        self.hide()
        follow(self, self._restyle)

    @property
    def newest(self) -> BannerEntry | None:
        """The message shown last that is still there."""
        return self._newest[-1] if self._newest else None

    @property
    def level(self) -> str:
        """The newest message's level ('' when none shows)."""
        return self.newest.level if self.newest else ""

    @property
    def message(self) -> str:
        """The newest message ('' when none shows)."""
        return self.newest.message if self.newest else ""

    @property
    def details(self) -> str:
        """The newest message's technical detail."""
        return self.newest.details if self.newest else ""

    @property
    def label(self) -> QLabel:
        """The newest message's text label."""
        return self._newest_or_empty().label

    @property
    def details_label(self) -> QLabel:
        """The newest message's detail label."""
        return self._newest_or_empty().details_label

    @property
    def details_button(self) -> QToolButton:
        """The newest message's Details toggle."""
        return self._newest_or_empty().details_button

    @property
    def action_button(self) -> QToolButton:
        """The newest message's action button."""
        return self._newest_or_empty().action_button

    def shown(self) -> list[tuple[str, str]]:
        """(level, message) of every message, top to bottom."""
        return [(entry.level, entry.message) for entry in self.entries]

    def show_message(
        self,
        message: str,
        level: str = "error",
        details: str = "",
        action: tuple[str, Callable[[], None]] | None = None,
    ) -> None:
        """Add a message: level is error, warning or info; details (technical) behind a toggle; action, a
        button's text and what it does (the message closes first). The same text again replaces the earlier
        one. Errors are logged and name the log file (when it can be written)."""
        if level == "error":
            log.error("%s%s", message, f" ({details})" if details else "")
            if "Details in " not in message:
                message = message.rstrip() + details_note()
        for same in [entry for entry in self.entries if entry.message == message]:
            self._drop(same)
        entry = BannerEntry(level, message, details, action, self)
        entry.kept = not self.window().isVisible()  # said at start-up: nothing later can have made it obsolete
        # above the messages of its level (the newest first) and those less important
        at = next((i for i, shown in enumerate(self.entries) if RANKS[shown.level] >= RANKS[level]), len(self.entries))
        self.entries.insert(at, entry)
        self._newest.append(entry)
        self.column.insertWidget(at, entry)
        while len(self.entries) > MAX_SHOWN:
            self._drop(max(self.entries, key=lambda e: (RANKS[e.level], -self._newest.index(e))))
        self.show()

    def dismiss(self, message: str | None = None) -> None:
        """Take a message away: the one with this text, else the newest (not one said at start-up, which
        stays until the user closes it)."""
        if message is not None:
            targets = [entry for entry in self.entries if entry.message == message]
        else:
            targets = [entry for entry in self._newest[-1:] if not entry.kept]
        for entry in targets:
            self.remove(entry)

    def clear(self) -> None:
        """Take every message away."""
        for entry in list(self.entries):
            self._drop(entry)
        self.hide()

    def remove(self, entry: BannerEntry) -> None:
        """Take one message away (its ×, its action); the stack hides once empty."""
        self._drop(entry)
        if not self.entries:
            self.hide()

    def _drop(self, entry: BannerEntry) -> None:
        if entry in self.entries:
            self.entries.remove(entry)
            self._newest.remove(entry)
            self.column.removeWidget(entry)
            entry.hide()
            entry.deleteLater()

    def _newest_or_empty(self) -> BannerEntry:
        return self.newest or self._empty

    def _restyle(self) -> None:
        rules = [
            f"QFrame#{OBJECT_NAMES[level]} {{ background: {bg}; border: 1px solid {border}; border-radius: 8px; }}"
            f" QFrame#{OBJECT_NAMES[level]} QLabel, QFrame#{OBJECT_NAMES[level]} QToolButton"
            f" {{ color: {fg}; background: transparent; border: none; }}"
            for level, name in LEVELS.items()
            for bg, fg, border in [getattr(theme, name)]
        ]
        rules.append(
            "QToolButton:checked { text-decoration: underline; }"
            " QToolButton#bannerAction { text-decoration: underline; font-weight: 600; }"
            " QLabel#bannerDetails { font-size: 11px; }"
        )
        self.setStyleSheet(" ".join(rules))


def _selectable(text: str, name: str = "") -> QLabel:
    label = QLabel(text, objectName=name)  # type: ignore[call-overload]
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def _tool_button(text: str, tip: str, name: str = "", checkable: bool = False) -> QToolButton:
    button = QToolButton(text=text, objectName=name, checkable=checkable)  # type: ignore[call-arg]
    button.setAutoRaise(True)
    button.setToolTip(tip)
    return button
