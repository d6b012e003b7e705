"""A horizontal bar of what a pair needs (weights, caches, runtime) against the machine's limit."""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QSizePolicy, QWidget

from specchat.hub.memory_fit import GREEN, RED, YELLOW, MemoryFit
from specchat.hub.units import format_bytes

from .. import theme

PART_COLOURS = {
    "target weights": "#2f6fde",
    "target cache": "#7fa6ec",
    "draft weights": "#8a63d2",
    "draft cache": "#bda6e8",
    "runtime": "#b8c0cc",
}
LEVEL_TONES = {GREEN: "good", YELLOW: "warn", RED: "bad"}  # the verdict pill's tone (style.TONES)
LEVEL_WORDS = {GREEN: "Fits", YELLOW: "Tight", RED: "Does not fit"}
HEIGHT = 12


class MemoryBar(QWidget):
    """Segments per part, scaled to the limit; a red overflow marker when the pair does not fit."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.fit: MemoryFit | None = None
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_fit(self, fit: MemoryFit | None) -> None:
        """Show a fit (None clears the bar)."""
        self.fit = fit
        self.setToolTip("" if fit is None else "\n".join(f"{label}: {format_bytes(n)}" for label, n in fit.parts))
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(240, HEIGHT + 2)

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        track = QRectF(0, 1, self.width(), HEIGHT)
        painter.setBrush(QColor(theme.BORDER if theme.is_dark() else "#e6e9ef"))
        painter.drawRoundedRect(track, HEIGHT / 2, HEIGHT / 2)
        fit = self.fit
        if fit is None or fit.limit_bytes <= 0:
            return
        scale = track.width() / max(fit.limit_bytes, fit.needed_bytes)
        painter.setClipRect(track)
        x = track.left()
        for label, n in fit.parts:
            width = n * scale
            if width <= 0:
                continue
            painter.setBrush(QColor(PART_COLOURS.get(label, "#b8c0cc")))
            painter.drawRect(QRectF(x, track.top(), width, HEIGHT))
            x += width
        if fit.needed_bytes > fit.limit_bytes:  # the limit as a line inside the overflowing bar
            painter.setBrush(QColor("#d64545"))
            painter.drawRect(QRectF(fit.limit_bytes * scale - 1, track.top(), 2, HEIGHT))
        painter.end()


def fit_numbers(fit: MemoryFit) -> tuple[str, str]:
    """("needs 1.2 GB of 17.2 GB (total RAM)", "at 8,192 tokens of context · 9.8 GB free now")."""
    return (
        f"needs {format_bytes(fit.needed_bytes)} of {format_bytes(fit.limit_bytes)} ({fit.limit_source})",
        f"at {fit.context:,} tokens of context · {format_bytes(fit.available_bytes)} free now",
    )


def fit_legend(fit: MemoryFit) -> str:
    """Rich text: a coloured square and the size of each part."""
    items = (
        f"<span style='color:{PART_COLOURS.get(label, '#b8c0cc')}'>■</span>&nbsp;{label} {format_bytes(n)}"
        for label, n in fit.parts
        if n > 0
    )
    return " &nbsp; ".join(item.replace(" ", "&nbsp;").replace("<span&nbsp;", "<span ") for item in items)
