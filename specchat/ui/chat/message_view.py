"""One message card: role, collapsible thinking, Markdown body, stats footer, actions."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QProgressBar, QToolButton, QVBoxLayout, QWidget

from .action_row import ActionRow
from .footer import FOOTER_TOOLTIP
from .markdown_source import COPIED_LABEL, COPIED_MS
from .markdown_view import MarkdownView, body_font
from .trace import ReplyTrace, SavedTrace, split_thinking

ROLE_NAMES = {"user": "You", "assistant": "Assistant"}
COPY_TEXT = "Copy"
EDIT_TIPS = {
    "user": "Edit this message and send it again",
    "assistant": "Change this reply's text by hand; the next reply reads it as you leave it",
}
BRANCH_TEXT = "Branch from here"
BRANCH_TIP = "Start a new chat with the messages up to this one; this chat stays as it is"


class MessageView(QFrame):
    """A user message or an assistant reply (streaming or finished)."""

    editRequested = Signal(int)  # message position
    branchRequested = Signal(int)  # message position: a new chat with the messages up to this one
    regenerateRequested = Signal()
    continueRequested = Signal()
    deleteRequested = Signal(int)  # message position
    versionRequested = Signal(int, int)  # message position, version number

    def __init__(self, role: str, position: int, text: str = "", parent=None):
        super().__init__(parent)
        self.role, self.position, self.text = role, position, text
        self.message_id: int | None = None  # its row in the store, once saved
        self.trace: ReplyTrace | SavedTrace | None = None
        self.streaming = False
        self.version, self.version_count = 0, 1
        self.color_drafts = False
        self.setObjectName("messageCard")
        self.setProperty("role", role)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 10, 16, 10)
        layout.setSpacing(4)
        layout.addLayout(self._header())
        self.thinking_toggle = QToolButton(objectName="link", checkable=True)  # type: ignore[call-arg]
        self.thinking_toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.thinking_toggle.toggled.connect(self._show_thinking)
        self.thinking = MarkdownView(muted=True)
        self.thinking.setFont(body_font(-1))
        self.prefill_label = QLabel(objectName="footer", wordWrap=True)  # type: ignore[call-overload]
        self.prefill_bar = QProgressBar(textVisible=False, maximumHeight=4)  # type: ignore[call-arg]
        self.body = MarkdownView()
        self.body.setFont(body_font())
        self.footer = QLabel(objectName="footer")  # type: ignore[call-overload]
        self.footer.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.footer.setWordWrap(True)  # a long stats line must not widen the card past the transcript
        self.footer.setToolTip(FOOTER_TOOLTIP)
        for widget in (
            self.prefill_label,
            self.prefill_bar,
            self.thinking_toggle,
            self.thinking,
            self.body,
            self.footer,
        ):
            layout.addWidget(widget)
        self.prefill_label.hide()
        self.prefill_bar.hide()
        self.thinking_toggle.hide()
        self.thinking.hide()
        self.footer.hide()
        self.render()

    def _header(self) -> QHBoxLayout:
        row = QHBoxLayout()
        role_label = QLabel(ROLE_NAMES.get(self.role, self.role), objectName="roleLabel")  # type: ignore[call-overload]
        row.addWidget(role_label, 0, Qt.AlignmentFlag.AlignTop)
        self.edit_button = _link("Edit", EDIT_TIPS.get(self.role, EDIT_TIPS["user"]))
        self.edit_button.clicked.connect(lambda: self.editRequested.emit(self.position))
        self.regenerate_button = _link("Regenerate", "Generate this reply again (Ctrl+R)")
        self.regenerate_button.clicked.connect(self.regenerateRequested.emit)
        self.continue_button = _link("Continue", "")  # shown and explained by the chat (ui/chat/continuation.py)
        self.continue_button.clicked.connect(self.continueRequested.emit)
        self.copy_button = _link(COPY_TEXT, "Copy the whole message to the clipboard")
        self.copy_button.clicked.connect(self.copy)
        self._copy_reset = QTimer(self, singleShot=True, interval=COPIED_MS)
        self._copy_reset.timeout.connect(lambda: self.copy_button.setText(COPY_TEXT))
        self.delete_button = _link(
            "Delete", "Delete this message and the reply after it" if self.role == "user" else "Delete this reply"
        )
        self.delete_button.clicked.connect(lambda: self.deleteRequested.emit(self.position))
        self.branch_button = _link(BRANCH_TEXT, BRANCH_TIP)
        self.branch_button.clicked.connect(lambda: self.branchRequested.emit(self.position))
        self.action_row = ActionRow(
            (
                self._versions(),
                self.copy_button,
                self.delete_button,
                self.branch_button,
                self.edit_button,
                self.regenerate_button,
                self.continue_button,
            ),
            self,
        )
        row.addWidget(self.action_row, 1)
        self.regenerate_button.hide()
        self.continue_button.hide()
        self.set_versions(0, 1)
        return row

    def _versions(self) -> QWidget:
        """‹ 2/3 ›, kept together on one line of the action row."""
        self.versions = QWidget(self)
        row = QHBoxLayout(self.versions)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        self.previous_button = _link("‹", "Show the previous version of this reply")
        self.previous_button.clicked.connect(lambda: self.versionRequested.emit(self.position, self.version - 1))
        self.version_label = QLabel(objectName="footer")  # type: ignore[call-overload]
        self.next_button = _link("›", "Show the next version of this reply")
        self.next_button.clicked.connect(lambda: self.versionRequested.emit(self.position, self.version + 1))
        for widget in (self.previous_button, self.version_label, self.next_button):
            row.addWidget(widget)
        return self.versions

    def start_trace(self, trace: ReplyTrace) -> None:
        """Follow a streaming reply; call render() to show what has arrived."""
        self.trace = trace
        self.streaming = True
        self.set_footer("")

    def end_stream(self) -> None:
        """The reply stopped streaming (the prefill indicator goes)."""
        self.streaming = False

    def show_saved(self, text: str, footer: str, trace: SavedTrace | ReplyTrace | None) -> None:
        """Show a finished reply (a loaded one, or another version): text, stats line and tints."""
        self.text, self.trace, self.streaming = text, trace, False
        self.render()
        self.set_footer(footer)

    def set_versions(self, shown: int, count: int) -> None:
        """‹ shown+1/count › for a regenerated reply; hidden while it has one version."""
        self.version, self.version_count = shown, count
        self.versions.setVisible(count > 1)
        self.version_label.setText(f"{shown + 1}/{count}")
        self.previous_button.setEnabled(shown > 0)
        self.next_button.setEnabled(shown < count - 1)

    def full_text(self) -> str:
        """The whole message as written (a reply's thinking included)."""
        return self.trace.text if self.trace is not None else self.text

    def copy(self) -> None:
        """Put the whole message on the clipboard; the Copy link says Copied for a moment."""
        QGuiApplication.clipboard().setText(self.full_text())
        self.copy_button.setText(COPIED_LABEL)
        self._copy_reset.start()

    def set_footer(self, text: str) -> None:
        """Show the stats line under the reply."""
        self.footer.setText(text)
        self.footer.setVisible(bool(text))

    def set_color_drafts(self, on: bool) -> None:
        """Tint characters that came from accepted drafts (replies generated in this session)."""
        if on != self.color_drafts:
            self.color_drafts = on
            self.render()

    def set_actions_enabled(self, edit: bool, regenerate: bool) -> None:
        """Offer Edit, Delete, Branch and versions only when idle, and Regenerate on the last reply."""
        self.edit_button.setEnabled(edit)
        self.delete_button.setEnabled(edit)
        self.branch_button.setEnabled(edit)
        self.previous_button.setEnabled(edit and self.version > 0)
        self.next_button.setEnabled(edit and self.version < self.version_count - 1)
        self.regenerate_button.setVisible(self.role == "assistant" and regenerate)

    def render(self) -> None:  # type: ignore[override]  # hides QWidget.render(target), unused on a card
        """Draw the current text (and the draft tints when enabled)."""
        if self.role == "user":
            self.body.set_plain(self.text)
            return
        text = self.full_text()
        reading = self._render_prefill(text)
        parts = split_thinking(text)
        trace = self.trace if self.color_drafts else None
        flags = trace.char_from_draft if trace is not None else None
        rejections = trace.rejection_chars() if trace is not None else {}
        self.body.set_markdown_text(
            parts.answer,
            _slice(flags, parts.answer_start, len(parts.answer)),
            _shift(rejections, parts.answer_start, len(parts.answer)),
        )
        self.body.setVisible((bool(parts.answer) or parts.thinking is None) and not reading)
        self._render_thinking(parts, flags, rejections)

    def _render_prefill(self, text: str) -> bool:
        """Show 'Reading the prompt…' and its bar while a streaming reply has no text yet (or what a queued
        one waits for, with a busy bar); True when shown."""
        progress = self.trace.prefill if self.trace is not None and self.streaming and not text else None
        waiting = getattr(self.trace, "waiting", None) if self.streaming and progress is None else None
        self.prefill_label.setVisible(progress is not None or waiting is not None)
        self.prefill_bar.setVisible(progress is not None or waiting is not None)
        if waiting is not None:
            self.prefill_label.setText(waiting)
            self.prefill_bar.setRange(0, 0)  # busy: how far the job ahead has got is its own
        if progress is not None:
            self.prefill_label.setText(prefill_text(progress.done, progress.total, progress.model))
            self.prefill_bar.setRange(0, max(progress.total, 1))
            self.prefill_bar.setValue(progress.done)
        return progress is not None

    def _render_thinking(self, parts, flags, rejections) -> None:
        if parts.thinking is None:
            self.thinking_toggle.hide()
            self.thinking.hide()
            return
        words = len(parts.thinking.split())
        state = f"Thought ({words} words)" if parts.thinking_done else f"Thinking… ({words} words)"
        arrow = "▾" if self.thinking_toggle.isChecked() else "▸"
        self.thinking_toggle.setText(f"{arrow} {state}")
        self.thinking_toggle.show()
        body = parts.thinking.strip("\n")
        lead = len(parts.thinking) - len(parts.thinking.lstrip("\n"))
        start = parts.thinking_start + lead
        self.thinking.set_plain(body, _slice(flags, start, len(body)), _shift(rejections, start, len(body)))

    def _show_thinking(self, shown: bool) -> None:
        self.thinking.setVisible(shown)
        self.render()


def _link(text: str, tooltip: str) -> QToolButton:
    button = QToolButton(objectName="link", text=text)  # type: ignore[call-arg]
    button.setToolTip(tooltip)
    return button


def prefill_text(done: int, total: int, model: str = "target") -> str:
    """E.g. 'Reading the prompt… 1,024 / 4,096 tokens', or 'Draft reading the prompt… 512 / 4,096 tokens'."""
    who = "Draft reading the prompt" if model == "draft" else "Reading the prompt"
    return f"{who}… {token_count(done, total)}"


def token_count(done: int, total: int) -> str:
    """'1,024 / 4,096 tokens'."""
    return f"{done:,} / {total:,} tokens"


def _slice(flags, start: int, length: int):
    return None if flags is None else flags[start : start + length]


def _shift(rejections: dict, start: int, length: int) -> dict:
    return {o - start: s for o, s in rejections.items() if start <= o < start + length}
