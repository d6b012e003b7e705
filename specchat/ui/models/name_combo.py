"""A combo box of model names: a name too long for the box is shortened with an ellipsis, whole in its tooltip."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFontMetrics, QPalette
from PySide6.QtWidgets import QComboBox, QStyle, QStyleOptionComboBox, QStylePainter

ELLIPSIS = "…"
LABEL_MARGIN = 4  # the styles inset the label a pixel or two inside the edit field
MIN_CHARACTERS = 14  # the box's size hint; longer names are shortened, not the panel widened


def fitted_name(name: str, metrics: QFontMetrics, width: int) -> str:
    """The name as it fits in width pixels: whole, else without its owner ("…/Qwen3-8B-4bit"), else elided."""
    if metrics.horizontalAdvance(name) <= width:
        return name
    _owner, slash, model = name.partition("/")
    short = f"{ELLIPSIS}/{model}" if slash else name
    if metrics.horizontalAdvance(short) <= width:
        return short
    return metrics.elidedText(short, Qt.TextElideMode.ElideMiddle, width)


class NameCombo(QComboBox):
    """A QComboBox that never cuts a name off mid-word: it elides it, and its tooltip names it whole."""

    def __init__(self, purpose: str, parent=None):
        super().__init__(parent)
        self.purpose = purpose  # what the box is for, under the name in the tooltip
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(MIN_CHARACTERS)
        self.setToolTip(purpose)

    def tooltip_text(self) -> str:
        """The current name in full, then what the box is for."""
        return "\n".join(part for part in (self.currentText(), self.purpose) if part)

    def shown_text(self) -> str:
        """The current name as the box draws it, shortened to fit."""
        option = self._option()
        return fitted_name(option.currentText, self.fontMetrics(), self._label_width(option))

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            self.setToolTip(self.tooltip_text())  # read when asked: set_models changes items with signals blocked
        return super().event(event)

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        # QComboBox.paintEvent, with the label's text shortened to fit instead of clipped
        painter = QStylePainter(self)
        painter.setPen(self.palette().color(QPalette.ColorRole.Text))
        option = self._option()
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        option.currentText = fitted_name(option.currentText, self.fontMetrics(), self._label_width(option))
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)

    def _option(self) -> QStyleOptionComboBox:
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        return option

    def _label_width(self, option: QStyleOptionComboBox) -> int:
        field = self.style().subControlRect(
            QStyle.ComplexControl.CC_ComboBox, option, QStyle.SubControl.SC_ComboBoxEditField, self
        )
        return max(0, field.width() - LABEL_MARGIN)
