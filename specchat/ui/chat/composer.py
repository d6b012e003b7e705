"""Where the user types: Send / Stop, the thinking switch, and edit-and-resend mode."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .markdown_view import body_font

SEND_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter)
LITERAL_TAB = (Qt.KeyboardModifier.ControlModifier, Qt.KeyboardModifier.MetaModifier)  # Ctrl+Tab (either Ctrl on a Mac)
TAB_TIP = "Tab moves to Send, Shift+Tab back; Ctrl+Tab types a tab character"
THINKING_TIP = "Qwen3 enable_thinking: the model reasons first; the reasoning is shown collapsed"


class Composer(QFrame):
    """A text box with Send (Enter; Shift+Enter is a new line, or the other way round) that turns
    into Stop while a reply streams. Ctrl+Enter (Cmd+Enter on macOS) always sends. Tab and Shift+Tab move the
    focus (to Send, and back); Ctrl+Tab types a tab character."""

    sendRequested = Signal(str)
    stopRequested = Signal()
    thinkingToggled = Signal(bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("composer")
        self.editing: int | None = None  # position of the user message being edited
        self.enter_sends = True  # False: Enter is a new line and Shift+Enter sends
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 8)
        layout.setSpacing(6)
        self.edit_bar = QHBoxLayout()
        self.edit_label = QLabel("Editing a message: Send replaces it and everything after it.", objectName="footer")  # type: ignore[call-overload]
        self.cancel_edit = QToolButton(objectName="link", text="Cancel edit")  # type: ignore[call-arg]
        self.cancel_edit.clicked.connect(self.leave_edit)
        self.edit_bar.addWidget(self.edit_label, 1)
        self.edit_bar.addWidget(self.cancel_edit)
        layout.addLayout(self.edit_bar)
        self.text = QPlainTextEdit()
        self.text.installEventFilter(self)
        self.text.setTabChangesFocus(True)  # Tab goes to Send; Ctrl+Tab types a tab (eventFilter)
        self.text.setToolTip(TAB_TIP)
        self.text.setFont(body_font())
        self.text.setFixedHeight(84)
        layout.addWidget(self.text)
        layout.addLayout(self._buttons())
        stops = self.tab_stops()  # Tab from the text goes to Send (Stop while a reply streams), then Think
        for first, second in zip(stops, stops[1:]):
            QWidget.setTabOrder(first, second)
        QShortcut(QKeySequence("Ctrl+Return"), self.text, activated=self._send)  # type: ignore[call-overload]
        QShortcut(QKeySequence("Ctrl+Enter"), self.text, activated=self._send)  # type: ignore[call-overload]
        self._show_edit_bar(False)
        self.set_enter_sends(True)
        self.set_busy(False)

    def set_enter_sends(self, enter_sends: bool) -> None:
        """Enter sends and Shift+Enter starts a new line (True), or the other way round (False)."""
        self.enter_sends = enter_sends
        send, newline = ("Enter", "Shift+Enter") if enter_sends else ("Shift+Enter", "Enter")
        self.text.setPlaceholderText(f"Message the model…  ({send} to send, {newline} for a new line)")

    def tab_stops(self) -> list[QWidget]:
        """The composer's controls in Tab order (hidden ones are skipped when tabbing)."""
        return [self.cancel_edit, self.text, self.send_button, self.stop_button, self.thinking]

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Enter / Shift+Enter in the text box: send or a new line, as the setting says; Ctrl+Tab: a tab."""
        if (
            watched is self.text
            and isinstance(event, QKeyEvent)
            and event.key() == Qt.Key.Key_Tab
            and event.modifiers() in LITERAL_TAB
        ):
            if event.type() == QEvent.Type.KeyPress:
                self.text.insertPlainText("\t")  # a plain Tab moves the focus (setTabChangesFocus)
            event.accept()  # ShortcutOverride accepted: Ctrl+Tab is the text box's, not a shortcut's
            return True
        if (
            watched is self.text
            and event.type() == QEvent.Type.KeyPress
            and isinstance(event, QKeyEvent)
            and event.key() in SEND_KEYS
        ):
            modifiers = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
            if modifiers == Qt.KeyboardModifier.NoModifier and self.enter_sends:
                self._send()
                return True
            if modifiers == Qt.KeyboardModifier.ShiftModifier:
                if self.enter_sends:
                    self.text.insertPlainText("\n")  # Qt would insert a line separator (U+2028)
                else:
                    self._send()
                return True
        return super().eventFilter(watched, event)

    def _buttons(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.thinking = QCheckBox("Think before answering")
        self.thinking.setToolTip(THINKING_TIP)
        self.thinking.toggled.connect(self.thinkingToggled)
        self.send_button = QPushButton("Send", objectName="primary")  # type: ignore[call-overload]
        self.send_button.clicked.connect(self._send)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the reply (Esc); what has arrived is kept")
        self.stop_button.clicked.connect(self.stopRequested)
        row.addWidget(self.thinking)
        row.addStretch(1)
        row.addWidget(self.stop_button)
        row.addWidget(self.send_button)
        return row

    def set_thinking_available(self, available: bool, reason: str = "") -> None:
        """Offer the thinking switch only when the model's chat template has one; reason says why not."""
        self.thinking.setEnabled(available)
        self.thinking.setToolTip(THINKING_TIP if available else reason)

    def set_busy(self, busy: bool) -> None:
        """While a reply streams only Stop is offered."""
        self.send_button.setVisible(not busy)
        self.stop_button.setVisible(busy)

    def set_ready(self, ready: bool, reason: str = "") -> None:
        """Send works only with a model loaded."""
        self.send_button.setEnabled(ready)
        self.send_button.setToolTip(f"Send ({'Enter' if self.enter_sends else 'Shift+Enter'})" if ready else reason)

    def begin_edit(self, position: int, text: str) -> None:
        """Put a user message back in the box; Send replaces it."""
        self.editing = position
        self.text.setPlainText(text)
        self.text.setFocus()
        self._show_edit_bar(True)

    def leave_edit(self) -> None:
        """Back to writing a new message."""
        self.editing = None
        self.text.clear()
        self._show_edit_bar(False)

    def _show_edit_bar(self, shown: bool) -> None:
        self.edit_label.setVisible(shown)
        self.cancel_edit.setVisible(shown)

    def _send(self) -> None:
        text = self.text.toPlainText().strip()
        if text and self.send_button.isVisible() and self.send_button.isEnabled():
            self.sendRequested.emit(text)

    def keyPressEvent(self, event):
        if event.key() == Qt.Key.Key_Escape and self.stop_button.isVisible():
            self.stopRequested.emit()
            return
        super().keyPressEvent(event)
