"""A layout that places widgets in a row and wraps them onto the next line when the width runs out.

Its minimum width is its widest item, not the sum of them, so a row of controls never forces a dock
(and with it the window) wider than the screen.
"""

from __future__ import annotations

from PySide6.QtCore import QMargins, QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QSizePolicy, QWidget

SPACING = 8


class FlowLayout(QLayout):
    """Items left to right, wrapped like words; an item added with stretch=True takes the rest of its line."""

    def __init__(self, parent: QWidget | None = None, spacing: int = SPACING, right_aligned: bool = False):
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._stretch: set[int] = set()  # ids of items that widen to the end of their line
        self._spacing = spacing
        self.right_aligned = right_aligned  # each line ends at the right edge (a card's action links)
        self.setContentsMargins(QMargins(0, 0, 0, 0))

    def add(self, widget: QWidget, stretch: bool = False) -> None:
        """Add a widget at the end; stretch: it takes the free width of its line."""
        self.addWidget(widget)
        if stretch:
            self._stretch.add(id(self._items[-1]))

    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 (Qt's name)
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # noqa: N802
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # noqa: N802
        if not 0 <= index < len(self._items):
            return None
        item = self._items.pop(index)
        self._stretch.discard(id(item))
        return item

    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        return self._place(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802
        super().setGeometry(rect)
        self._place(rect, move=True)

    def sizeHint(self) -> QSize:  # noqa: N802
        """All items on one line."""
        items = self._shown()
        width = sum(item.sizeHint().width() for item in items) + self._spacing * max(0, len(items) - 1)
        height = max((item.sizeHint().height() for item in items), default=0)
        return self._with_margins(QSize(width, height))

    def minimumSize(self) -> QSize:  # noqa: N802
        """The widest item alone on its line."""
        size = QSize()
        for item in self._shown():
            size = size.expandedTo(item.minimumSize())
        return self._with_margins(size)

    def _with_margins(self, size: QSize) -> QSize:
        margins = self.contentsMargins()
        return size + QSize(margins.left() + margins.right(), margins.top() + margins.bottom())

    def _shown(self) -> list[QLayoutItem]:
        return [item for item in self._items if not _hidden(item)]

    def _place(self, rect: QRect, move: bool) -> int:
        """Lay the items out in rect (or only measure); returns the height they take."""
        margins = self.contentsMargins()
        area = rect.adjusted(margins.left(), margins.top(), -margins.right(), -margins.bottom())
        lines = self._lines(area.width())
        y = area.y()
        for line in lines:
            height = max(item.sizeHint().height() for item in line)
            if move:
                self._place_line(line, area, y, height)
            y += height + self._spacing
        used = y - self._spacing - area.y() if lines else 0
        return used + margins.top() + margins.bottom()

    def _lines(self, width: int) -> list[list[QLayoutItem]]:
        """The items broken into lines that fit width (an item wider than width gets a line of its own)."""
        lines: list[list[QLayoutItem]] = []
        line: list[QLayoutItem] = []
        used = 0
        for item in self._shown():
            need = item.sizeHint().width()
            if line and used + self._spacing + need > width:
                lines.append(line)
                line, used = [], 0
            used += (self._spacing if line else 0) + need
            line.append(item)
        if line:
            lines.append(line)
        return lines

    def _place_line(self, line: list[QLayoutItem], area: QRect, y: int, height: int) -> None:
        widths = [min(item.sizeHint().width(), area.width()) for item in line]
        free = area.width() - sum(widths) - self._spacing * (len(line) - 1)
        stretchers = [i for i, item in enumerate(line) if id(item) in self._stretch]
        for i in stretchers:
            widths[i] += max(0, free) // len(stretchers)
        x = area.x() + (max(0, free) if self.right_aligned and not stretchers else 0)
        for item, width in zip(line, widths, strict=True):
            item_height = height if _grows_vertically(item) else item.sizeHint().height()
            item.setGeometry(QRect(QPoint(x, y + (height - item_height) // 2), QSize(width, item_height)))
            x += width + self._spacing


def _hidden(item: QLayoutItem) -> bool:
    widget = item.widget()
    return widget is not None and widget.isHidden()


def _grows_vertically(item: QLayoutItem) -> bool:
    widget = item.widget()
    return widget is not None and widget.sizePolicy().verticalPolicy() == QSizePolicy.Policy.Expanding
