"""The scrolling list of message cards, with an empty state and throttled streaming redraws."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QScrollArea, QVBoxLayout, QWidget

from specchat.store import StoredMessage
from specchat.store.versions import EDITED_BY_HAND

from .empty_state import EmptyState
from .footer import footer_text
from .message_view import MessageView
from .trace import ReplyTrace, SavedTrace, saved_trace

READING_WIDTH = 860
REDRAW_MS = 50  # at most ~20 redraws a second while a reply streams
END_SLACK = 8  # px: a view this close to the end counts as at the end
INTERRUPTED = "(interrupted)"  # footer of a reply the app did not see finish (a crash, a kill)
EDITED_NOTE = "edited by hand"  # the end of the footer of a reply whose text the user changed


class TranscriptView(QScrollArea):
    """Messages of the open conversation; the last card can stream."""

    editRequested = Signal(int)  # message position
    branchRequested = Signal(int)  # message position
    regenerateRequested = Signal()
    continueRequested = Signal()
    deleteRequested = Signal(int)  # message position
    versionRequested = Signal(int, int)  # message position, version number

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.views: list[MessageView] = []
        self.color_drafts = False
        self.busy = False
        self._streaming: MessageView | None = None
        self.notice: MessageView | None = None  # a reply stopped before any text: shown, not a message
        # Keep the end in view as cards grow (a streaming reply, its footer, a conversation laying out) until
        # the user scrolls away from it; scrolling back to the end pins it again.
        self._pinned = True
        self._redraw = QTimer(self, singleShot=True, interval=REDRAW_MS)
        self._redraw.timeout.connect(self._redraw_streaming)
        self.empty = EmptyState()
        outer = QWidget(objectName="centralArea")  # type: ignore[call-arg]
        row = QHBoxLayout(outer)
        row.setContentsMargins(24, 16, 24, 16)
        column = QWidget()
        column.setMaximumWidth(READING_WIDTH)
        self.column = QVBoxLayout(column)
        self.column.setSpacing(12)
        self.column.setContentsMargins(0, 0, 0, 0)
        self.column.addWidget(self.empty)
        self.column.addStretch(1)
        row.addStretch(1)
        row.addWidget(column, 100)
        row.addStretch(1)
        self.setWidget(outer)
        self.verticalScrollBar().rangeChanged.connect(self._follow)
        self.verticalScrollBar().actionTriggered.connect(self._user_scrolled)  # wheel, drag, keys: not setValue
        MessageView("assistant", 0, "warm-up").deleteLater()  # PySide builds its enum types on first use (~0.1 s)

    def show_messages(self, messages: list[StoredMessage], version_counts: dict[int, int] | None = None) -> None:
        """Replace the cards with a saved conversation (tints, rejection marks and versions included) and
        scroll to its last message."""
        self.clear()
        for message in messages:
            view = self._add(message.role, message.content)
            view.message_id = message.id
            if message.role == "assistant":
                view.show_saved(message.content, message_footer(message), saved_trace(message.content, message.trace))
                view.set_versions(message.version, (version_counts or {}).get(message.id, 1))
        self._update_actions()
        self._pin_end()

    def show_edited(self, position: int, message: StoredMessage) -> None:
        """Show the reply at `position` as it was edited by hand (no tints: they belonged to the old text)."""
        self._pinned = False  # the user reads this card: its new length must not scroll it away
        self.views[position].show_saved(message.content, message_footer(message), None)

    def show_version(
        self, position: int, text: str, footer: str, trace: SavedTrace | None, shown: int, count: int
    ) -> None:
        """Show another version of the reply at `position`."""
        self._pinned = False  # the user reads this card: its new length must not scroll it away
        view = self.views[position]
        view.show_saved(text, footer, trace)
        view.set_versions(shown, count)
        self._update_actions()

    def clear(self) -> None:
        """Remove every card."""
        self._drop_notice()
        self._streaming = None
        for view in self.views:
            view.deleteLater()
        self.views = []
        self.empty.setVisible(True)

    def add_user(self, text: str) -> MessageView:
        """Append the user's message."""
        view = self._add("user", text)
        self._update_actions()
        return view

    def start_reply(self, trace: ReplyTrace) -> MessageView:
        """Append an assistant card that follows a streaming trace."""
        view = self._add("assistant", "")
        view.start_trace(trace)
        self._streaming = view
        self._redraw.setInterval(REDRAW_MS)
        self._pin_end()
        self._update_actions()
        return view

    def restart_reply(self, position: int, trace: ReplyTrace) -> MessageView:
        """Regenerate: the reply card at `position` follows a new streaming trace."""
        self._drop_notice()
        view = self.views[position]
        view.start_trace(trace)
        view.render()
        self._streaming = view
        self._redraw.setInterval(REDRAW_MS)
        self._pin_end()
        self._update_actions()
        return view

    def reply_updated(self) -> None:
        """New text arrived: redraw soon (coalesced)."""
        if not self._redraw.isActive():
            self._redraw.start()

    def finish_reply(self, text: str, footer: str, shown: int = 0, count: int = 1) -> None:
        """The streaming reply ended: final text, stats line and its version among count (followed into view
        unless the user scrolled away)."""
        view = self._streaming
        self._streaming = None
        self._redraw.stop()
        if view is not None:
            view.end_stream()
            view.text = text
            view.render()
            view.set_footer(footer)
            view.set_versions(shown, count)
        self._update_actions()

    def show_reply_text(self, text: str) -> None:
        """Show the last reply as this text (its tool-call markup left out: each call is a card below it)."""
        if self.views and self.views[-1].role == "assistant":
            view = self.views[-1]
            view.show_saved(text, view.footer.text(), None)

    def keep_as_notice(self, text: str) -> None:
        """The last card (a reply stopped before any text) stays in view saying so, but is no message."""
        view = self.views.pop()
        self._streaming = None
        self._redraw.stop()
        view.end_stream()
        view.render()
        view.set_footer(text)
        for button in (
            view.copy_button,
            view.delete_button,
            view.regenerate_button,
            view.edit_button,
            view.branch_button,
        ):
            button.hide()
        self.notice = view
        self._update_actions()

    def remove(self, positions: list[int]) -> None:
        """Drop the cards at these positions; the later ones move up."""
        self._drop_notice()
        for position in sorted(positions, reverse=True):
            self.views.pop(position).deleteLater()
        for i, view in enumerate(self.views):
            view.position = i
        self.empty.setVisible(not self.views)
        self._update_actions()

    def truncate(self, keep: int) -> None:
        """Drop the cards from position `keep` on."""
        self._drop_notice()
        for view in self.views[keep:]:
            view.deleteLater()
        self.views = self.views[:keep]
        self.empty.setVisible(not self.views)
        self._update_actions()

    def set_busy(self, busy: bool) -> None:
        """While a reply streams, Edit and Regenerate are off."""
        self.busy = busy
        self._update_actions()

    def set_color_drafts(self, on: bool) -> None:
        """Tint accepted-draft characters in every reply that has a trace."""
        self.color_drafts = on
        for view in self.views:
            view.set_color_drafts(on)

    def _add(self, role: str, text: str) -> MessageView:
        self._drop_notice()
        view = MessageView(role, len(self.views), text)
        view.set_color_drafts(self.color_drafts)
        view.editRequested.connect(self.editRequested)
        view.branchRequested.connect(self.branchRequested)
        view.regenerateRequested.connect(self.regenerateRequested)
        view.continueRequested.connect(self.continueRequested)
        view.deleteRequested.connect(self.deleteRequested)
        view.versionRequested.connect(self.versionRequested)
        view.thinking_toggle.clicked.connect(lambda _checked=False: self._unpin_unless_streaming(view))
        self.column.insertWidget(self.column.count() - 1, view)
        self.views.append(view)
        self.empty.setVisible(False)
        return view

    def _update_actions(self) -> None:
        last = len(self.views) - 1
        for i, view in enumerate(self.views):
            view.set_actions_enabled(not self.busy, not self.busy and i == last)

    def _redraw_streaming(self) -> None:
        if self._streaming is not None:
            start = time.perf_counter()
            self._streaming.render()
            # long replies render slower: redraw less often so the UI thread stays mostly idle
            spent_ms = (time.perf_counter() - start) * 1000
            self._redraw.setInterval(max(REDRAW_MS, int(spent_ms * 4)))

    def _drop_notice(self) -> None:
        if self.notice is not None:
            self.notice.deleteLater()
            self.notice = None

    def _pin_end(self) -> None:
        self._pinned = True
        self.verticalScrollBar().setValue(self.verticalScrollBar().maximum())

    def _follow(self, _low: int, high: int) -> None:
        if self._pinned:
            self.verticalScrollBar().setValue(high)

    def _user_scrolled(self, _action: int) -> None:
        bar = self.verticalScrollBar()  # its slider is where the action puts it; its value follows
        self._pinned = bar.sliderPosition() >= bar.maximum() - END_SLACK

    def _unpin_unless_streaming(self, view: MessageView) -> None:
        """Thinking opened or closed on a finished card: keep it where the user is reading."""
        if view is not self._streaming:
            self._pinned = False


def message_footer(message: StoredMessage) -> str:
    """A saved reply's stats line ('(interrupted)' when the app never saw it finish)."""
    return reply_footer(message.stats, message.cancelled) if message.complete else INTERRUPTED


def reply_footer(stats: dict | None, cancelled: bool) -> str:
    """A reply's stats line, ending with 'edited by hand' when the user changed its text after it was written."""
    generated = {key: value for key, value in (stats or {}).items() if key != EDITED_BY_HAND}
    said = footer_text(generated or None, cancelled)
    if not (stats or {}).get(EDITED_BY_HAND):
        return said
    return f"{said} · {EDITED_NOTE}" if said else EDITED_NOTE
