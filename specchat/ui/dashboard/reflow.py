"""Containers that reflow with their width: tiles wrap into rows, charts sit in a grid or in tabs.

Both report their narrowest arrangement as their minimum size, so a narrow dock (a laptop screen)
never has to grow to fit the arrangement a wide one would use.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QSize
from PySide6.QtWidgets import QGridLayout, QLayout, QSizePolicy, QStackedLayout, QTabWidget, QWidget

if TYPE_CHECKING:
    from .charts import ChartCard

SPACING = 8


def columns_that_fit(width: int, item_width: int, choices: tuple[int, ...], spacing: int = SPACING) -> int:
    """The most columns (from choices, largest first) of item_width that fit in width."""
    for columns in sorted(choices, reverse=True):
        if columns * item_width + (columns - 1) * spacing <= width:
            return columns
    return min(choices)


def _span(count: int, size: int, spacing: int = SPACING) -> int:
    return count * size + max(0, count - 1) * spacing


class ReflowGrid(QWidget):
    """Equal items in as many columns (of the given choices) as the width allows; rows below."""

    def __init__(self, items: list[QWidget], item_width: int, choices: tuple[int, ...], parent=None):
        super().__init__(parent)
        self.items, self.item_width, self.choices = list(items), item_width, choices
        self.columns = 0
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSpacing(SPACING)
        self.grid.setSizeConstraint(QLayout.SizeConstraint.SetNoConstraint)  # minimumSizeHint rules
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self._arrange(max(self.choices))

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt's name)
        return False  # its height is fixed by _arrange for the width it has

    def item_height(self, width: int) -> int:
        """The tallest item at this width (wrapped text included)."""
        return max(
            max(item.minimumSizeHint().height(), item.minimumHeight(), item.heightForWidth(width))
            for item in self.items
        )

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        fewest = min(self.choices)
        rows = math.ceil(len(self.items) / fewest)
        return QSize(_span(fewest, self.item_width), _span(rows, self.item_height(self.item_width)))

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(_span(self.columns, self.item_width), self.height_for(max(self.width(), 1)))

    def height_for(self, width: int) -> int:
        """The height of the rows the items take at this width."""
        columns = columns_that_fit(width, self.item_width, self.choices)
        column_width = max(self.item_width, (width - (columns - 1) * SPACING) // columns)
        return _span(math.ceil(len(self.items) / columns), self.item_height(column_width))

    def refit(self) -> None:
        """Items changed their text: rows may need another height."""
        self._arrange(columns_that_fit(self.width(), self.item_width, self.choices))

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._arrange(columns_that_fit(event.size().width(), self.item_width, self.choices))

    def event(self, event) -> bool:
        handled = super().event(event)
        if event.type() == QEvent.Type.LayoutRequest:  # an item's text changed: its row may need more height
            self.refit()
        return handled

    def _arrange(self, columns: int) -> None:
        height = self.height_for(self.width()) if self.width() > 1 else self.minimumSizeHint().height()
        if height != self.height():
            self.setFixedHeight(height)  # rows change the height; the charts take the rest
        if columns == self.columns:
            return
        self.columns = columns
        for item in self.items:
            self.grid.removeWidget(item)
        for i, item in enumerate(self.items):
            self.grid.addWidget(item, i // columns, i % columns)
        for c in range(max(self.choices)):
            self.grid.setColumnStretch(c, 1 if c < columns else 0)
            self.grid.setColumnMinimumWidth(c, self.item_width if c < columns else 0)
        self.updateGeometry()


class ChartDeck(QWidget):
    """Charts in a two-column grid when there is room for it, else one chart at a time in tabs."""

    def __init__(self, cards: list[ChartCard], min_size: QSize, parent=None):
        super().__init__(parent)
        self.min_size = min_size  # the smallest a chart may be and stay readable
        self.cards: list[ChartCard] = []
        self.mode = ""
        self.grid_page = QWidget()
        self.grid = QGridLayout(self.grid_page)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSpacing(SPACING)
        self.grid.setSizeConstraint(QLayout.SizeConstraint.SetNoConstraint)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.stack = QStackedLayout(self)
        self.stack.setSizeConstraint(QLayout.SizeConstraint.SetNoConstraint)
        self.stack.addWidget(self.grid_page)
        self.stack.addWidget(self.tabs)
        self.set_cards(cards)

    def set_cards(self, cards: list[ChartCard]) -> None:
        """Show these charts (in this order); cards left out are removed from the deck."""
        if cards == self.cards:
            return
        for card in self.cards:
            if card not in cards:
                card.setParent(None)
        self.cards = list(cards)
        self.mode = ""
        self._arrange(self.size())

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt's name)
        return False  # the charts' wrapped legends must not ask for their preferred height: they stretch

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        tab_bar = self.tabs.tabBar().sizeHint().height()
        return QSize(self.min_size.width(), self.min_size.height() + tab_bar)

    def sizeHint(self) -> QSize:  # noqa: N802
        # no taller than the minimum: in a scroll area the dashboard is as tall as its parts' hints, and the
        # charts, which stretch, take the rest of the height anyway
        return QSize(2 * self.min_size.width() + SPACING, self.minimumSizeHint().height())

    def grid_fits(self, size: QSize) -> bool:
        """Whether two columns and the rows they need fit in size."""
        rows = math.ceil(len(self.cards) / 2)
        return size.width() >= _span(2, self.min_size.width()) and size.height() >= _span(rows, self.min_size.height())

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._arrange(event.size())

    def _arrange(self, size: QSize) -> None:
        mode = "grid" if self.cards and self.grid_fits(size) else "tabs"
        if mode == self.mode:
            return
        self.mode = mode
        current = self.tabs.currentIndex()
        while self.tabs.count():
            self.tabs.removeTab(0)
        for card in self.cards:
            self.grid.removeWidget(card)
        if mode == "grid":
            for i, card in enumerate(self.cards):
                last_alone = i == len(self.cards) - 1 and i % 2 == 0
                self.grid.addWidget(card, i // 2, i % 2, 1, 2 if last_alone else 1)
                card.show()
            self.stack.setCurrentWidget(self.grid_page)
        else:
            for card in self.cards:
                self.tabs.addTab(card, card.title.text())
                card.show()
            self.tabs.setCurrentIndex(max(current, 0))
            self.stack.setCurrentWidget(self.tabs)
