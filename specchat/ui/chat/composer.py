"""Where the user types: Send / Stop, the thinking switch, edit-and-resend mode, attached text files and how full
the context is."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from PySide6.QtCore import QEvent, QObject, QSize, Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .. import theme
from ..theme_switch import follow
from .attachments import (
    AttachmentError,
    AttachmentTray,
    local_files,
    paperclip_icon,
    read_attachment,
    with_attachments,
)
from .markdown_view import body_font

SEND_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter)
LITERAL_TAB = (Qt.KeyboardModifier.ControlModifier, Qt.KeyboardModifier.MetaModifier)  # Ctrl+Tab (either Ctrl on a Mac)
TAB_TIP = "Tab moves to Send, Shift+Tab back; Ctrl+Tab types a tab character"
THINKING_TIP = "Qwen3 enable_thinking: the model reasons first; the reasoning is shown collapsed"
ATTACH_TIP = "Attach text files to the message (or drop them on the message box)"
EDIT_NOTE = "Editing a message: Send replaces it and everything after it."
DRAG_EVENTS = (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.Drop)
SendGate = Callable[[str, Callable[[str], None]], None]  # (message, deliver): deliver(message) once it may go


class Composer(QFrame):
    """A text box with Send (Enter; Shift+Enter is a new line, or the other way round) that turns
    into Stop while a reply streams. Ctrl+Enter (Cmd+Enter on macOS) always sends. Tab and Shift+Tab move the
    focus (to Send, and back); Ctrl+Tab types a tab character. Text files dropped on it or chosen with the
    paperclip are attached: each shows as a chip and goes into the message on send."""

    sendRequested = Signal(str)
    stopRequested = Signal()
    thinkingToggled = Signal(bool)
    refused = Signal(str)  # a file that was not attached, or a message that was not sent: why (also shown here)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("composer")
        self.setAcceptDrops(True)
        self.editing: int | None = None  # position of the user message being edited
        self.enter_sends = True  # False: Enter is a new line and Shift+Enter sends
        self._said: list[str] = []  # why the last files or message were refused
        self._warning = ""  # the message being written would not fit the context
        # decides whether a message may go (the context fill installs its check); the default lets it go
        self.send_gate: SendGate = lambda message, deliver: deliver(message)
        self.choose_files: Callable[[], list[str]] = self._choose_files  # the file dialog (tests put in their own)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 8)
        layout.setSpacing(6)
        self.edit_bar = QHBoxLayout()
        self.edit_label = QLabel(EDIT_NOTE, objectName="footer")  # type: ignore[call-overload]
        self.cancel_edit = QToolButton(objectName="link", text="Cancel edit")  # type: ignore[call-arg]
        self.cancel_edit.clicked.connect(self.leave_edit)
        self.edit_bar.addWidget(self.edit_label, 1)
        self.edit_bar.addWidget(self.cancel_edit)
        layout.addLayout(self.edit_bar)
        self.notice = QLabel(objectName="composerNotice")  # type: ignore[call-overload]
        self.notice.setWordWrap(True)
        self.notice.setVisible(False)
        layout.addWidget(self.notice)
        self.tray = AttachmentTray()
        self.tray.changed.connect(self._chips_changed)
        layout.addWidget(self.tray)
        layout.addLayout(self._text_row())
        layout.addLayout(self._buttons())
        stops = self.tab_stops()  # Tab from the text goes to Send (Stop while a reply streams), then Think
        for first, second in zip(stops, stops[1:]):
            QWidget.setTabOrder(first, second)
        QShortcut(QKeySequence("Ctrl+Return"), self.text, activated=self._send)  # type: ignore[call-overload]
        QShortcut(QKeySequence("Ctrl+Enter"), self.text, activated=self._send)  # type: ignore[call-overload]
        follow(self, self._restyle)
        self._show_edit_bar(False)
        self.set_enter_sends(True)
        self.set_busy(False)

    def _text_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        row.setSpacing(6)
        self.attach_button = QToolButton()
        self.attach_button.setToolTip(ATTACH_TIP)
        self.attach_button.setAccessibleName("Attach files")
        self.attach_button.setIconSize(QSize(18, 18))
        self.attach_button.clicked.connect(lambda: self.add_files(self.choose_files()))
        self.text = QPlainTextEdit()
        for watched in (self.text, self.text.viewport()):  # drops land on the viewport
            watched.installEventFilter(self)
        self.text.setTabChangesFocus(True)  # Tab goes to Send; Ctrl+Tab types a tab (eventFilter)
        self.text.setToolTip(TAB_TIP)
        self.text.setFont(body_font())
        self.text.setFixedHeight(84)
        row.addWidget(self.attach_button, 0, Qt.AlignmentFlag.AlignTop)
        row.addWidget(self.text, 1)
        return row

    def set_enter_sends(self, enter_sends: bool) -> None:
        """Enter sends and Shift+Enter starts a new line (True), or the other way round (False)."""
        self.enter_sends = enter_sends
        send, newline = ("Enter", "Shift+Enter") if enter_sends else ("Shift+Enter", "Enter")
        self.text.setPlaceholderText(f"Message the model…  ({send} to send, {newline} for a new line)")

    def tab_stops(self) -> list[QWidget]:
        """The composer's controls in Tab order (hidden ones are skipped when tabbing)."""
        chips = [chip.remove_button for chip in self.tray.chips]
        return [
            self.cancel_edit,
            self.attach_button,
            *chips,
            self.text,
            self.send_button,
            self.stop_button,
            self.thinking,
        ]

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Enter / Shift+Enter in the text box: send or a new line, as the setting says; Ctrl+Tab: a tab;
        files dropped on it: attached."""
        if event.type() in DRAG_EVENTS and isinstance(event, QDropEvent) and local_files(event.mimeData()):
            self._take_drag(event)
            return True
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

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if local_files(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        self._take_drag(event)

    def _take_drag(self, event: QDropEvent) -> None:
        """Accept a drag of local files; attach them when they are dropped."""
        event.acceptProposedAction()
        if event.type() == QEvent.Type.Drop:
            self.add_files(local_files(event.mimeData()))

    def _buttons(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.thinking = QCheckBox("Think before answering")
        self.thinking.setToolTip(THINKING_TIP)
        self.thinking.toggled.connect(self.thinkingToggled)
        self.fill_label = QLabel(objectName="footer")  # type: ignore[call-overload]
        self.fill_label.setVisible(False)
        self.send_button = QPushButton("Send", objectName="primary")  # type: ignore[call-overload]
        self.send_button.clicked.connect(self._send)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the reply (Esc); what has arrived is kept")
        self.stop_button.clicked.connect(self.stopRequested)
        row.addWidget(self.thinking)
        row.addStretch(1)
        row.addWidget(self.fill_label)
        row.addWidget(self.stop_button)
        row.addWidget(self.send_button)
        return row

    # --- attachments ---

    def add_files(self, paths: Iterable[str]) -> None:
        """Attach text files; each one refused (an image, not UTF-8, attached already) is said in one line."""
        refusals = []
        for path in paths:
            try:
                attachment = read_attachment(path)
            except AttachmentError as error:
                refusals.append(str(error))
                continue
            if self.tray.has(attachment.path):
                refusals.append(f"{attachment.name} is attached already")
            else:
                self.tray.add(attachment)
        self.say(*refusals)

    def _choose_files(self) -> list[str]:
        paths, _filter = QFileDialog.getOpenFileNames(self, "Attach text files", "", "All files (*)")
        return paths

    def _chips_changed(self) -> None:
        previous: QWidget = self.attach_button
        for chip in self.tray.chips:  # Tab reaches each chip's × between the paperclip and the text box
            QWidget.setTabOrder(previous, chip.remove_button)
            previous = chip.remove_button

    def message(self) -> str:
        """The message Send would send: the typed text, then each attached file's text under its name."""
        return with_attachments(self.text.toPlainText().strip(), self.tray.attachments)

    def say(self, *lines: str) -> None:
        """Show why a file was not attached or a message not sent (no lines: clear it)."""
        self._said = list(lines)
        self._show_notice()
        for line in lines:
            self.refused.emit(line)

    def refuse_send(self, why: str) -> None:
        """Say that the message was not sent because it does not fit; said until the box changes so it fits."""
        self._warning = why
        self._show_notice()
        self.refused.emit(why)

    def show_fill(self, text: str, warning: str = "", tip: str = "", near: bool = False) -> None:
        """How full the context is ('1,234 / 32,768 tokens', empty: hidden); a warning (the message would not
        fit) turns it red and is said above the text box until it no longer holds; near (nearly full) amber."""
        self.fill_label.setText(text)
        self.fill_label.setToolTip(tip)
        self.fill_label.setObjectName("fillOver" if warning else "fillNear" if near else "footer")
        self.fill_label.setVisible(bool(text))
        self._warning = warning
        self._show_notice()
        self._restyle()

    def _show_notice(self) -> None:
        lines = self._said + ([self._warning] if self._warning and self._warning not in self._said else [])
        self.notice.setText("\n".join(lines))
        self.notice.setVisible(bool(lines))

    # --- states ---

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

    def begin_edit(self, position: int, text: str, note: str = "") -> None:
        """Put a message back in the box; Send replaces it (note: what Send will do, above the box)."""
        self.editing = position
        self.edit_label.setText(note or EDIT_NOTE)
        self.text.setPlainText(text)
        self.text.setFocus()
        self._show_edit_bar(True)

    def leave_edit(self) -> None:
        """Back to writing a new message: the box, its attached files and its notice are emptied."""
        self.editing = None
        self.text.clear()
        self.tray.clear()
        self.say()
        self._show_edit_bar(False)

    def _show_edit_bar(self, shown: bool) -> None:
        self.edit_label.setVisible(shown)
        self.cancel_edit.setVisible(shown)

    def _send(self) -> None:
        message = self.message()
        if message and self._can_send():
            self.say()
            self.send_gate(message, self._deliver)

    def _deliver(self, message: str) -> None:
        """The gate let the message go: send it, unless the box changed or Send went away meanwhile."""
        if message == self.message() and self._can_send():
            self.sendRequested.emit(message)

    def _can_send(self) -> bool:
        return self.send_button.isVisible() and self.send_button.isEnabled()

    def _restyle(self) -> None:
        p = theme.palette()
        self.notice.setStyleSheet(f"color: {p.reject};")
        fill_colors = {"fillOver": p.reject, "fillNear": p.banner_warning[1]}
        self.fill_label.setStyleSheet(f"color: {fill_colors.get(self.fill_label.objectName(), p.muted)};")
        self.attach_button.setIcon(paperclip_icon(p.text, self.devicePixelRatioF()))

    def keyPressEvent(self, event):
        if event.key() == Qt.Key.Key_Escape and self.stop_button.isVisible():
            self.stopRequested.emit()
            return
        super().keyPressEvent(event)
