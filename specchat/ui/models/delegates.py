"""Painters for the table: a rounded progress bar with its text, and a coloured status pill."""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from .. import theme
from .rows import (
    CANCELLED,
    COMPLETE,
    DONE,
    DOWNLOADING,
    FAILED,
    NOT_DOWNLOADED,
    PARTIAL,
    QUEUED,
    ModelRow,
    subtitle_text,
    title_text,
)
from .table_model import FRACTION_ROLE, ROW_ROLE, STATE_ROLE

BAR_HEIGHT = 6
TRACK = QColor("#e6e9ef")
BAR_COLOURS = {
    DOWNLOADING: QColor(theme.ACCENT),
    CANCELLED: QColor("#c4cad4"),
    FAILED: QColor(theme.REJECT),
    QUEUED: QColor("#c4cad4"),
}
DONE_COLOUR = QColor("#2e9e5b")
# (background, text) of the status pill
PILLS = {
    COMPLETE: ("#dff3e6", "#1d6b3c"),
    PARTIAL: ("#fff1d6", "#8a5a00"),
    NOT_DOWNLOADED: ("#eef0f3", "#5b6472"),
    DOWNLOADING: ("#e4edfc", "#1d4aa0"),
    QUEUED: ("#eef0f3", "#5b6472"),
    CANCELLED: ("#fff1d6", "#8a5a00"),
    FAILED: ("#fdecec", "#8a1f1f"),
    DONE: ("#dff3e6", "#1d6b3c"),
}
DARK_PILLS = {
    COMPLETE: ("#1f3d2a", "#9fe0b5"),
    PARTIAL: ("#3d321c", "#f1d48a"),
    NOT_DOWNLOADED: ("#2c3038", "#aab2bf"),
    DOWNLOADING: ("#1d2a40", "#b9cff7"),
    QUEUED: ("#2c3038", "#aab2bf"),
    CANCELLED: ("#3d321c", "#f1d48a"),
    FAILED: ("#3d1f22", "#f6b9b9"),
    DONE: ("#1f3d2a", "#9fe0b5"),
}


def _paint_selection(painter: QPainter, option: QStyleOptionViewItem, index) -> None:
    """The item background (selection, hover) without its text."""
    plain = QStyleOptionViewItem(option)
    QStyledItemDelegate().initStyleOption(plain, index)
    plain.text = ""
    widget = option.widget
    style = widget.style() if widget is not None else None
    if style is not None:
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, plain, painter, widget)


class ProgressDelegate(QStyledItemDelegate):
    """A thin bar over a line of text (percent, speed, time left) while a row has a transfer."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index) -> None:
        fraction = index.data(FRACTION_ROLE)
        state = index.data(STATE_ROLE)
        if fraction is None and state not in (QUEUED, DOWNLOADING):
            return super().paint(painter, option, index)
        _paint_selection(painter, option, index)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(option.rect).adjusted(8, 6, -8, -6)
        text_height = option.fontMetrics.height()
        top = rect.top() + max((rect.height() - text_height - BAR_HEIGHT - 3) / 2, 0)
        track = QRectF(rect.left(), top, rect.width(), BAR_HEIGHT)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(theme.BORDER) if theme.is_dark() else TRACK)
        painter.drawRoundedRect(track, BAR_HEIGHT / 2, BAR_HEIGHT / 2)
        done = max(0.0, min(1.0, fraction or 0.0))
        if done > 0:
            colour = DONE_COLOUR if done >= 1.0 and state != CANCELLED else BAR_COLOURS.get(state, DONE_COLOUR)
            painter.setBrush(colour)
            painter.drawRoundedRect(
                QRectF(track.left(), top, max(track.width() * done, BAR_HEIGHT), BAR_HEIGHT),
                BAR_HEIGHT / 2,
                BAR_HEIGHT / 2,
            )
        painter.setPen(QColor(theme.MUTED))
        text_rect = QRectF(rect.left(), track.bottom() + 3, rect.width(), text_height)
        text = option.fontMetrics.elidedText(index.data() or "", Qt.TextElideMode.ElideRight, int(text_rect.width()))
        painter.drawText(text_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, text)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index) -> QSize:
        hint = super().sizeHint(option, index)
        return QSize(max(hint.width(), 220), max(hint.height(), option.fontMetrics.height() + BAR_HEIGHT + 15))


class StatusDelegate(QStyledItemDelegate):
    """The status word in a rounded pill coloured by state."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index) -> None:
        _paint_selection(painter, option, index)
        text = index.data() or ""
        pills = DARK_PILLS if theme.is_dark() else PILLS
        background, foreground = pills.get(index.data(STATE_ROLE), pills[NOT_DOWNLOADED])
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        metrics = option.fontMetrics
        width, height = metrics.horizontalAdvance(text) + 16, metrics.height() + 4
        rect = QRectF(option.rect.left() + 6, option.rect.center().y() - height / 2 + 1, width, height)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(background))
        painter.drawRoundedRect(rect, height / 2, height / 2)
        painter.setPen(QColor(foreground))
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index) -> QSize:
        hint = super().sizeHint(option, index)
        return QSize(option.fontMetrics.horizontalAdvance(index.data() or "") + 28, hint.height())


class NameDelegate(QStyledItemDelegate):
    """The model's name over a muted line saying where it comes from (owner, curated, folder)."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index) -> None:
        row: ModelRow = index.data(ROW_ROLE)
        _paint_selection(painter, option, index)
        painter.save()
        rect = option.rect.adjusted(8, 3, -6, -3)
        title_font = QFont(option.font)
        title_font.setBold(row.local is not None)
        small = QFont(option.font)
        small.setPointSizeF(max(option.font.pointSizeF() - 1.5, 7.0))
        half = rect.height() // 2
        top, bottom = rect.adjusted(0, 0, 0, -half), rect.adjusted(0, half, 0, 0)
        painter.setFont(title_font)
        painter.setPen(QColor(theme.TEXT))
        title = QFontMetrics(title_font).elidedText(title_text(row), Qt.TextElideMode.ElideRight, rect.width())
        painter.drawText(top, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom, title)
        painter.setFont(small)
        painter.setPen(QColor(theme.MUTED))
        subtitle = QFontMetrics(small).elidedText(subtitle_text(row), Qt.TextElideMode.ElideMiddle, rect.width())
        painter.drawText(bottom, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop, subtitle)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index) -> QSize:
        hint = super().sizeHint(option, index)
        return QSize(hint.width(), max(hint.height(), 2 * option.fontMetrics.height() + 8))
