"""The Suite tab's results: a category x drafter table (speed against plain decoding, acceptance) and grouped
bars of each drafter's speed per category, both drawn from a suite report (suite_summary.py reads it)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from specchat.tuning.suite import PLAIN

from .. import theme
from .charts import BLUE, GREEN, ORANGE, PURPLE, RED, TEAL, ChartCard, make_plot
from .suite_summary import grid, labels

DASH = "—"
COLORS = (BLUE, ORANGE, TEAL, PURPLE, GREEN, RED)
NO_REPORT = "No suite run for this pair yet: Run suite measures every drafter on every category."


def cell_text(label: str, cell) -> str:
    """A table cell: plain decoding's speed, or a drafter's speed against it and its acceptance."""
    if label == PLAIN:
        return DASH if cell.tokens_per_s is None else f"{cell.tokens_per_s:.1f} tok/s"
    speed = DASH if cell.vs_plain is None else f"{cell.vs_plain:.2f}×"
    accepted = "" if cell.acceptance is None else f" · {cell.acceptance * 100:.0f}%"
    return speed + accepted + ("" if cell.exact else " ≠")


def tick_label(category: str) -> str:
    """A category under its bars, one line per word ("doc_summary": "doc" over "summary"): side by side in a
    narrow dock, the names whole would run into each other."""
    return category.replace("_", "\n").replace(" ", "\n")


class SuiteTable(QTableWidget):
    """Rows: the categories and all of them; columns: plain decoding, then each drafter at fixed and Auto K."""

    def __init__(self, parent=None):
        super().__init__(0, 0, parent)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)

    def show_report(self, report: dict[str, Any] | None) -> None:
        """Fill the grid from a report (empty for None); each row's fastest drafter in bold."""
        rows = grid(report) if report else {}
        columns = labels(report) if report else []
        self.setRowCount(len(rows))
        self.setColumnCount(len(columns))
        self.setHorizontalHeaderLabels(columns)
        self.setVerticalHeaderLabels(list(rows))
        for r, cells in enumerate(rows.values()):
            drafters = [(c.vs_plain or 0.0, label) for label, c in cells.items() if label != PLAIN and c.exact]
            fastest = max(drafters)[1] if drafters else None
            for c, label in enumerate(columns):
                cell = cells.get(label)
                item = QTableWidgetItem(DASH if cell is None else cell_text(label, cell))
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                if cell is not None and label == fastest and (cell.vs_plain or 0.0) > 1.0:
                    font = QFont(item.font())
                    font.setBold(True)
                    item.setFont(font)
                if cell is not None and not cell.exact:
                    item.setToolTip("The output differed from plain decoding's (or failed): not a usable speed")
                self.setItem(r, c, item)
        self._fit_height()

    def _fit_height(self) -> None:
        """As tall as its rows (no empty space below them), with room for a horizontal scroll bar."""
        self.resizeRowsToContents()
        rows = sum(self.rowHeight(r) for r in range(self.rowCount()))
        bar = self.horizontalScrollBar().sizeHint().height()
        self.setFixedHeight(self.horizontalHeader().sizeHint().height() + rows + bar + 2 * self.frameWidth())


class SuiteChart(ChartCard):
    """Grouped bars: each drafter's speed over plain decoding's, per category (the line at 1× is plain)."""

    def __init__(self, parent=None):
        super().__init__(
            "Speed vs plain decoding by category", make_plot("× plain", counts=False), NO_REPORT, [], parent
        )
        self.bars: list[pg.BarGraphItem] = []
        item = self.plot.getPlotItem()
        item.addItem(pg.InfiniteLine(pos=1.0, angle=0, pen=pg.mkPen(theme.MUTED, width=1)))
        item.setMouseEnabled(x=False, y=False)
        item.setMenuEnabled(False)
        self.plot.setMinimumHeight(200)
        self.title.setWordWrap(True)  # whole on one line, it alone would be wider than the dock beside the chat
        self.header_row.setStretchFactor(self.title, 100)  # it wraps only where the card is narrower than it

    def show_report(self, report: dict[str, Any] | None) -> None:
        """One group of bars per category, one colour per drafter cell."""
        item = self.plot.getPlotItem()
        for bars in self.bars:
            item.removeItem(bars)
        self.bars = []
        rows = grid(report) if report else {}
        drafters = [label for label in (labels(report) if report else []) if label != PLAIN]
        width = 0.8 / max(len(drafters), 1)
        legend = []
        for i, label in enumerate(drafters):
            color = COLORS[i % len(COLORS)]
            legend.append((color, "bar", label.replace(" ", "\u00a0")))  # the legend wraps between entries only
            x = np.arange(len(rows), dtype=float) - 0.4 + width * (i + 0.5)
            heights = [(cells[label].vs_plain or 0.0) if label in cells else 0.0 for cells in rows.values()]
            bars = pg.BarGraphItem(x=x, height=heights, width=width * 0.9, brush=pg.mkBrush(color), pen=pg.mkPen(color))
            item.addItem(bars)
            self.bars.append(bars)
        self.set_legend(legend)
        ticks = [(i, tick_label(name)) for i, name in enumerate(rows)]
        self._fit_ticks(ticks)
        item.enableAutoRange()
        item.autoRange()
        self.set_empty(None if rows else NO_REPORT)

    def _fit_ticks(self, ticks: list[tuple[int, str]]) -> None:
        """Label the categories; the axis as tall as its longest label's lines (pyqtgraph sizes it for one)."""
        axis = self.plot.getPlotItem().getAxis("bottom")
        axis.setTicks([ticks])
        lines = max((label.count("\n") + 1 for _, label in ticks), default=1)
        font = axis.style.get("tickFont") or axis.font()
        axis.setHeight(lines * QFontMetrics(font).height() + 2 * axis.style["tickTextOffset"][1] + 4)
