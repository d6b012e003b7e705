"""A one-line label that shortens its text with "…" instead of forcing its width on the layout."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QLabel, QSizePolicy

MIN_CHARS = 6  # the narrowest it gets: about this many characters


class ElidedLabel(QLabel):
    """Plain text on one line, elided at the right when narrow; the full text is its tooltip."""

    def __init__(self, text: str = "", parent=None, **kwargs):
        super().__init__(text, parent, **kwargs)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setToolTip(text)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        super().setText(text)
        self.setToolTip(text)

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        metrics = self.fontMetrics()
        return QSize(
            min(metrics.horizontalAdvance(self.text()), metrics.averageCharWidth() * MIN_CHARS),
            super().minimumSizeHint().height(),
        )

    def is_elided(self) -> bool:
        """True when the text does not fit and shows shortened."""
        return self.fontMetrics().horizontalAdvance(self.text()) > self.contentsRect().width()

    def paintEvent(self, event) -> None:  # noqa: N802
        painter = QPainter(self)
        rect = self.contentsRect()
        shown = self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, rect.width())
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(rect, int(self.alignment()) | Qt.AlignmentFlag.AlignVCenter, shown)
