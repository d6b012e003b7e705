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
from .style import tone_colours
from .table_model import FRACTION_ROLE, ROW_ROLE, STATE_ROLE

BAR_HEIGHT = 6
NAME_INSETS = (8, 6)  # the name's room inside its cell: from the left and the right edge
PILL_INSET, PILL_PADDING = 6, 8  # the status pill: from the cell's left edge; around its word
TRACK = QColor("#e6e9ef")
BAR_COLOURS = {  # palette colour names (read when painting, so a theme switch follows) or fixed colours
    DOWNLOADING: "ACCENT",
    CANCELLED: "#c4cad4",
    FAILED: "REJECT",
    QUEUED: "#c4cad4",
}
DONE_COLOUR = QColor("#2e9e5b")
STATE_TONES = {  # the status pill's tone (style.TONES) by row state
    COMPLETE: "good",
    PARTIAL: "warn",
    NOT_DOWNLOADED: "neutral",
    DOWNLOADING: "info",
    QUEUED: "neutral",
    CANCELLED: "warn",
    FAILED: "bad",
    DONE: "good",
}


def _bar_colour(state: str) -> QColor:
    name = BAR_COLOURS.get(state)
    if name is None:
        return DONE_COLOUR
    return QColor(name if name.startswith("#") else getattr(theme, name))


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
            painter.setBrush(DONE_COLOUR if done >= 1.0 and state != CANCELLED else _bar_colour(state))
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
        background, foreground = tone_colours(STATE_TONES.get(index.data(STATE_ROLE), "neutral"))
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        metrics = option.fontMetrics
        width, height = metrics.horizontalAdvance(text) + 2 * PILL_PADDING, metrics.height() + 4
        rect = QRectF(option.rect.left() + PILL_INSET, option.rect.center().y() - height / 2 + 1, width, height)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(background))
        painter.drawRoundedRect(rect, height / 2, height / 2)
        painter.setPen(QColor(foreground))
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index) -> QSize:
        hint = super().sizeHint(option, index)
        room = option.fontMetrics.horizontalAdvance(index.data() or "") + 2 * PILL_PADDING + PILL_INSET + 4
        return QSize(room, hint.height())


class NameDelegate(QStyledItemDelegate):
    """The model's name over a muted line saying where it comes from (owner, curated, folder)."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index) -> None:
        row: ModelRow = index.data(ROW_ROLE)
        _paint_selection(painter, option, index)
        painter.save()
        left, right = NAME_INSETS
        rect = option.rect.adjusted(left, 3, -right, -3)
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
