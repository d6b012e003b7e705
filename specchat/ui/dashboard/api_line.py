"""The dashboard's API line: what the local API has served, from the server log's records (RequestSummary:
requests, failures, tokens, mean speed, the last request), as one elided link that opens the Server log
window; its tooltip has every figure. It sits under the footer's button, where the wrapped status line beside
it leaves room, so the dashboard grows no taller.

A record exists only once its request has ended, so this line and the status line's figures for an API
request change when a request ends; the live per-round charts and tiles keep following the request's engine
events while it runs (followed.py)."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import QSizePolicy, QToolButton, QWidget

from specchat.server.request_summary import RequestSummary, record_text, summary_tooltip, totals_text

NO_REQUESTS = "API: serving, no request yet"
OPENS = "Click to open the Server log: every request with its client, route, status, tokens, speed and errors."
MIN_CHARS = 6  # the narrowest it gets: about this many characters
SIDES = 8  # the link's border and padding, left and right together (theme.py's QToolButton#link)


def api_text(summary: RequestSummary) -> str:
    """'API: 12 requests · 1 failed · 3,456 tokens · 11.2 tok/s mean · 85% accepted · last: POST /v1/… · 200 …'."""
    if not summary.requests or summary.last is None:
        return NO_REQUESTS
    return f"API: {totals_text(summary)} · last: {record_text(summary.last)}"


class ApiLine(QToolButton):
    """A link reading the API's totals, elided at the right when narrow, that opens the Server log; shown while
    the app serves or once any request was recorded."""

    logRequested = Signal()  # open the Server log window

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("link")
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)  # never widens the footer
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setAccessibleName("Server log")
        self.serving = False
        self.summary = RequestSummary()
        self.full_text = ""
        self.clicked.connect(self.logRequested)
        self._refresh()

    def set_serving(self, serving: bool) -> None:
        """The app started or stopped serving."""
        self.serving = serving
        self._refresh()

    def show_summary(self, summary: RequestSummary) -> None:
        """The server log's new totals."""
        self.summary = summary
        self._refresh()

    def is_elided(self) -> bool:
        """True when the text does not fit and shows shortened."""
        return self.text() != self.full_text

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        return QSize(self.fontMetrics().horizontalAdvance(self.full_text) + SIDES, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        return QSize(self.fontMetrics().averageCharWidth() * MIN_CHARS, super().minimumSizeHint().height())

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        self._elide()

    def _refresh(self) -> None:
        self.full_text = api_text(self.summary)
        self.setToolTip(f"{summary_tooltip(self.summary)}\n\n{OPENS}")
        self._elide()
        self.setVisible(self.serving or self.summary.requests > 0)

    def _elide(self) -> None:
        room = max(0, self.width() - SIDES)
        self.setText(self.fontMetrics().elidedText(self.full_text, Qt.TextElideMode.ElideRight, room))
