"""One message card: role, collapsible thinking, Markdown body, stats footer, actions."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QVBoxLayout

from .footer import FOOTER_TOOLTIP
from .markdown_view import MarkdownView, body_font
from .trace import ReplyTrace, split_thinking

ROLE_NAMES = {"user": "You", "assistant": "Assistant"}


class MessageView(QFrame):
    """A user message or an assistant reply (streaming or finished)."""

    editRequested = Signal(int)        # message position
    regenerateRequested = Signal()

    def __init__(self, role: str, position: int, text: str = "", parent=None):
        super().__init__(parent)
        self.role, self.position, self.text = role, position, text
        self.trace: ReplyTrace | None = None
        self.color_drafts = False
        self.setObjectName("messageCard")
        self.setProperty("role", role)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 10, 16, 10)
        layout.setSpacing(4)
        layout.addLayout(self._header())
        self.thinking_toggle = QToolButton(objectName="link", checkable=True)
        self.thinking_toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.thinking_toggle.toggled.connect(self._show_thinking)
        self.thinking = MarkdownView(muted=True)
        self.thinking.setFont(body_font(-1))
        self.body = MarkdownView()
        self.body.setFont(body_font())
        self.footer = QLabel(objectName="footer")
        self.footer.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.footer.setWordWrap(True)  # a long stats line must not widen the card past the transcript
        self.footer.setToolTip(FOOTER_TOOLTIP)
        for widget in (self.thinking_toggle, self.thinking, self.body, self.footer):
            layout.addWidget(widget)
        self.thinking_toggle.hide()
        self.thinking.hide()
        self.footer.hide()
        self.render()

    def _header(self) -> QHBoxLayout:
        row = QHBoxLayout()
        row.addWidget(QLabel(ROLE_NAMES.get(self.role, self.role), objectName="roleLabel"))
        row.addStretch(1)
        self.edit_button = QToolButton(objectName="link", text="Edit")
        self.edit_button.setToolTip("Edit this message and send it again")
        self.edit_button.clicked.connect(lambda: self.editRequested.emit(self.position))
        self.regenerate_button = QToolButton(objectName="link", text="Regenerate")
        self.regenerate_button.setToolTip("Generate this reply again (Ctrl+R)")
        self.regenerate_button.clicked.connect(self.regenerateRequested.emit)
        row.addWidget(self.edit_button)
        row.addWidget(self.regenerate_button)
        if self.role != "user":  # never setVisible(True) here: a widget without a parent yet would
            self.edit_button.hide()  # open as a window of its own for a moment and take the focus
        self.regenerate_button.hide()
        return row

    def start_trace(self, trace: ReplyTrace) -> None:
        """Follow a streaming reply; call render() to show what has arrived."""
        self.trace = trace

    def set_text(self, text: str) -> None:
        """Replace the message text (a finished or loaded message)."""
        self.text = text
        self.render()

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
        """Offer Edit on user messages and Regenerate on the last reply."""
        self.edit_button.setEnabled(edit)
        self.regenerate_button.setVisible(self.role == "assistant" and regenerate)

    def render(self) -> None:
        """Draw the current text (and the draft tints when enabled)."""
        if self.role == "user":
            self.body.set_plain(self.text)
            return
        text = self.trace.text if self.trace is not None else self.text
        parts = split_thinking(text)
        colored = self.trace is not None and self.color_drafts
        flags = self.trace.char_from_draft if colored else None
        rejections = self.trace.rejection_chars() if colored else {}
        self.body.set_markdown_text(parts.answer, _slice(flags, parts.answer_start, len(parts.answer)),
                                    _shift(rejections, parts.answer_start, len(parts.answer)))
        self.body.setVisible(bool(parts.answer) or parts.thinking is None)
        self._render_thinking(parts, flags, rejections)

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


def _slice(flags, start: int, length: int):
    return None if flags is None else flags[start:start + length]


def _shift(rejections: dict, start: int, length: int) -> dict:
    return {o - start: s for o, s in rejections.items() if start <= o < start + length}
