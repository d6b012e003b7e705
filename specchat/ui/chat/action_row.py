"""A card's action links (Copy, Edit, Regenerate, …): right-aligned, and wrapped onto more lines when the
card is too narrow for one, so no link is ever cut off."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QSizePolicy, QWidget

SPACING = 6


class WrapLayout(QLayout):
    """Items in lines, each line right-aligned; a line breaks where the next item would not fit."""

    def __init__(self, parent: QWidget | None = None, spacing: int = SPACING):
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._spacing = spacing
        self.setContentsMargins(0, 0, 0, 0)

    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 (Qt's names)
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # noqa: N802
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # noqa: N802
        return self._items.pop(index) if 0 <= index < len(self._items) else None

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
        """Every item on one line."""
        items = self._shown()
        width = sum(item.sizeHint().width() for item in items) + self._spacing * max(0, len(items) - 1)
        return QSize(width, max((item.sizeHint().height() for item in items), default=0))

    def minimumSize(self) -> QSize:  # noqa: N802
        """The widest item on a line of its own."""
        size = QSize(0, 0)
        for item in self._shown():
            size = size.expandedTo(item.sizeHint())
        return size

    def _shown(self) -> list[QLayoutItem]:
        return [item for item in self._items if not item.isEmpty()]

    def _lines(self, width: int) -> list[list[QLayoutItem]]:
        lines: list[list[QLayoutItem]] = []
        used = 0
        for item in self._shown():
            need = item.sizeHint().width()
            if not lines or used + self._spacing + need > width:
                lines.append([])
                used = -self._spacing
            lines[-1].append(item)
            used += self._spacing + need
        return lines

    def _place(self, rect: QRect, move: bool) -> int:
        """Lay the items out in rect (or only measure); the height they take."""
        y = rect.y()
        for line in self._lines(rect.width()):
            height = max(item.sizeHint().height() for item in line)
            if move:
                self._place_line(line, rect, y, height)
            y += height + self._spacing
        return max(0, y - self._spacing - rect.y())

    def _place_line(self, line: list[QLayoutItem], rect: QRect, y: int, height: int) -> None:
        width = sum(item.sizeHint().width() for item in line) + self._spacing * (len(line) - 1)
        x = rect.x() + max(0, rect.width() - width)
        for item in line:
            hint = item.sizeHint()
            size = QSize(min(hint.width(), rect.width()), hint.height())
            item.setGeometry(QRect(QPoint(x, y + (height - hint.height()) // 2), size))
            x += hint.width() + self._spacing


class ActionRow(QWidget):
    """The links of one card, right-aligned, in as many lines as its width needs."""

    def __init__(self, widgets: Iterable[QWidget], parent: QWidget | None = None):
        super().__init__(parent)
        layout = WrapLayout(self)
        for widget in widgets:
            layout.addWidget(widget)
        policy = QSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
