"""The sweep's results: a table of every cell, and a bar chart of speedup by K (and auto K) per prompt type."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from specchat.tuning.sweep_report import cell_notes
from specchat.tuning.sweep_results import AUTO, DYNAMIC_LABEL, CellK, CellResult, Choice, is_best
from specchat.tuning.sweep_stats import BEST_RULE, DYNAMIC_RULE, cv_text

from .. import theme
from ..theme_switch import follow
from .charts import BLUE, GREEN, ORANGE, PURPLE, RED, TEAL, ChartCard, legend_html, make_plot, pen

DASH = "—"
LABEL_NUDGE = 6  # px pyqtgraph draws a bottom axis label past its axis (5), and one for the glyphs
AXIS_GAP = 12  # px around an axis label: its distance from the ticks and from the card's edge
COLUMNS = ("Prompt", "K", "tok/s", "Speedup", "Accept", "Acc/round", "CV", "Peak GB", "Notes")
PROMPT_COLORS = (BLUE, ORANGE, TEAL, PURPLE, GREEN, RED)
NOISY_BG = QColor("#fff3d6")
DIFFERS_BG = QColor("#fde4e4")
BASELINE_FG = QColor(theme.MUTED)
COLUMN_HELP = {
    "Prompt": "The prompt type the cell ran (each prompt: plain decoding first, then each K, then auto K).",
    "K": "Draft length: tokens drafted per round; 'baseline' is plain decoding (speculation off); "
    f"'{DYNAMIC_LABEL}' drafts each round until the drafter is unsure.",
    "tok/s": "Median decode speed over the measured reps (warmups left out): generated tokens over the time "
    "from the end of prompt processing to the last token. — when the output differed from plain decoding.",
    "Speedup": "This K's median tok/s over plain decoding's median, minus 1, in percent.",
    "Accept": "Share of drafted tokens the target accepted, over every measured rep.",
    "Acc/round": "Accepted drafted tokens per speculative round (each round also adds one target token).",
    "CV": "Robust spread of the reps: 1.4826 × MAD / median; amber above 5%; n/a with fewer than 3 reps.",
    "Peak GB": "Peak MLX memory of the cell's reps, in GB.",
    "Notes": "Flags: output differs, noisy, power source changed. "
    f"★ marks the best choice: {BEST_RULE}; {DYNAMIC_RULE}.",
}


def _pct(value: float | None, signed: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return DASH
    return f"{value:+.1f}%" if signed else f"{value:.1f}%"


def cell_texts(prompt: str, cell: CellResult, best: bool) -> list[str]:
    """The table row of one cell, as the texts of COLUMNS."""
    speed = DASH if cell.median_tokens_per_s is None else f"{cell.median_tokens_per_s:.1f}"
    acceptance = DASH if cell.acceptance_rate is None else _pct(cell.acceptance_rate * 100)
    per_round = DASH if cell.mean_accepted_per_round is None else f"{cell.mean_accepted_per_round:.2f}"
    notes = cell_notes(cell)
    if best:
        star = "★ best: Off" if cell.k is None else "★ best: auto K" if cell.k == AUTO else "★ best K"
        notes = star + (f"; {notes}" if notes else "")
    return [
        prompt,
        cell.label,
        speed,
        _pct(cell.speedup_pct, signed=True),
        acceptance,
        per_round,
        cv_text(cell.cv),
        f"{cell.peak_memory_bytes / 1e9:.2f}",
        notes,
    ]


def notes_help(text: str, cell: CellResult) -> str:
    """The hover text of a Notes cell: the whole note, and why Off or auto K won when it did."""
    if cell.k is None and text.startswith("★"):
        return text + "\nNo K beats plain decoding beyond the noise, so speculation stays off for this prompt type."
    if cell.k == AUTO and text.startswith("★"):
        return text + "\nAuto K beats plain decoding and the fastest fixed K beyond the noise."
    return text


def cap_help(cell: CellResult) -> str:
    """The hover text of an auto K row: how far its rounds may draft, and where that cap comes from."""
    most = f"{cell.max_k} tokens a round: " if cell.max_k is not None else ""
    return (
        f"{DYNAMIC_LABEL}: each round drafts until the drafter is unsure, at most {most}the engine's "
        "default max for auto K (not the sweep's largest K)."
    )


class SweepTable(QTableWidget):
    """One row per (prompt, cell); noisy cells amber, cells that failed the identity gate red."""

    def __init__(self, parent=None):
        super().__init__(0, len(COLUMNS), parent)
        self.setHorizontalHeaderLabels(COLUMNS)
        for column, name in enumerate(COLUMNS):
            item = self.horizontalHeaderItem(column)
            assert item is not None  # setHorizontalHeaderLabels made one per column
            item.setToolTip(COLUMN_HELP[name])
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setAlternatingRowColors(False)
        self.setShowGrid(False)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        follow(
            self,
            lambda: self.setStyleSheet(
                f"QTableWidget {{ background: {theme.SURFACE}; color: {theme.TEXT}; border: 1px solid {theme.BORDER}; "
                f"border-radius: 8px; }} QHeaderView::section {{ background: {theme.CODE_BG}; "
                f"border: none; padding: 4px 6px; color: {theme.MUTED}; font-weight: 600; }}"
            ),
        )

    def show_cells(self, prompts: list[tuple[str, list[CellResult]]], best: dict[str, Choice]) -> None:
        """Fill the table from (prompt name, cells) pairs; best marks the best choice per prompt (0: Off)."""
        rows = [(name, cell) for name, cells in prompts for cell in cells]
        self.setRowCount(len(rows))
        for row, (name, cell) in enumerate(rows):
            best_here = is_best(cell, best.get(name))
            for column, text in enumerate(cell_texts(name, cell, best_here)):
                self.setItem(row, column, self._item(text, cell, column, best_here))
        self._fit_last_column()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_last_column()

    def _fit_last_column(self) -> None:
        """Notes fills the room left when its texts fit there; else it is as wide as they are (the table
        scrolls), never cut to the room left."""
        header = self.horizontalHeader()
        last = len(COLUMNS) - 1
        need = max(header.sectionSizeHint(last), self.sizeHintForColumn(last))
        others = sum(header.sectionSize(column) for column in range(last))
        stretch = others + need <= self.viewport().width()
        if header.stretchLastSection() != stretch:
            header.setStretchLastSection(stretch)
            if not stretch:
                header.setSectionResizeMode(last, QHeaderView.ResizeMode.ResizeToContents)

    def _item(self, text: str, cell: CellResult, column: int, best: bool) -> QTableWidgetItem:
        item = QTableWidgetItem(text)
        notes = COLUMNS[column] == "Notes" and text
        if cell.k == AUTO:
            item.setToolTip(notes_help(text, cell) + "\n" + cap_help(cell) if notes else cap_help(cell))
        elif notes:
            item.setToolTip(notes_help(text, cell))
        if 1 <= column <= 7:
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if cell.identical is False:
            item.setBackground(QBrush(DIFFERS_BG))
        elif cell.noisy and COLUMNS[column] in ("tok/s", "Speedup", "CV", "Notes"):
            item.setBackground(QBrush(NOISY_BG))
        if cell.k is None:
            item.setForeground(QBrush(BASELINE_FG))
        if best:
            font = QFont()
            font.setBold(True)
            item.setFont(font)
        return item


class SpeedupChart(ChartCard):
    """Grouped bars: speedup over plain decoding for each K, one colour per prompt type."""

    def __init__(self, parent=None):
        super().__init__(
            "Speedup vs plain decoding",
            make_plot("speedup %", "draft length K"),
            "Run a sweep to see the speedup of each K.",
            [],
            parent,
        )
        self.bars: dict[str, pg.BarGraphItem] = {}
        self.markers: dict[str, pg.ScatterPlotItem] = {}
        item = self.plot.getPlotItem()
        item.addItem(pg.InfiniteLine(pos=0, angle=0, pen=pg.mkPen(theme.MUTED, width=1)))
        item.setMouseEnabled(x=False, y=False)  # a wheel over the chart scrolls the view, never zooms it
        item.setMenuEnabled(False)
        self._fit_axes()

    def _fit_axes(self) -> None:
        """Room for the axis labels whole: the bottom axis as tall as its ticks and label, the plot as tall as
        the left label (drawn upright along it) plus the bottom axis."""
        item = self.plot.getPlotItem()
        bottom, left = item.getAxis("bottom"), item.getAxis("left")
        tick_font = bottom.style.get("tickFont") or QFont()
        bottom_height = QFontMetrics(tick_font).height() + bottom.label.boundingRect().height() + AXIS_GAP
        bottom.setHeight(int(math.ceil(bottom_height)))
        left_margin, top, right, below = item.layout.getContentsMargins()  # pyqtgraph nudges the bottom label
        item.layout.setContentsMargins(left_margin, top, right, max(below, LABEL_NUDGE))  # 5 px below its axis
        left_label = left.label.boundingRect().width()
        self.plot.setMinimumHeight(
            max(self.plot.minimumHeight(), int(math.ceil(left_label + bottom_height)) + AXIS_GAP)
        )

    def show_cells(self, prompts: list[tuple[str, list[CellResult]]], ks: tuple[int, ...]) -> None:
        """Draw one bar group per K, and one for auto K when a prompt has it; noisy bars faded with a
        dashed edge, identity failures as red ✕ at 0."""
        item = self.plot.getPlotItem()
        for graphic in (*self.bars.values(), *self.markers.values()):
            item.removeItem(graphic)
        self.bars, self.markers = {}, {}
        slots = bar_slots(prompts, ks)
        width = 0.8 / max(len(prompts), 1)
        legend = []
        for i, (name, cells) in enumerate(prompts):
            color = PROMPT_COLORS[i % len(PROMPT_COLORS)]
            legend.append((color, "bar", name))
            by_k = {c.k: c for c in cells if c.k is not None}
            present = [k for k in slots if k in by_k]
            if present:  # pyqtgraph's BarGraphItem cannot take empty pen lists
                x = np.array([slots.index(k) for k in present], dtype=float) - 0.4 + width * (i + 0.5)
                self._draw(name, color, x, [by_k[k] for k in present], width)
        legend += [(theme.MUTED, "bar", "faded: noisy (CV > 5%)"), (RED, "cross", "output differs")]
        self.legend.setText(legend_html(legend))
        item.getAxis("bottom").setTicks([[(i, tick_text(k)) for i, k in enumerate(slots)]])
        item.enableAutoRange()  # each sweep's bars fit, whatever the last one's range was
        item.autoRange()
        self.set_empty(None if prompts else "Run a sweep to see the speedup of each K.")

    def _draw(self, name: str, color: str, x: np.ndarray, cells: list[CellResult], width: float) -> None:
        """One prompt's bars at x, and a red ✕ at 0 for each cell whose output differed."""
        item = self.plot.getPlotItem()
        heights = [c.speedup_pct if c.speedup_pct is not None else 0.0 for c in cells]
        brushes = [pg.mkBrush(color + ("66" if c.noisy else "e6")) for c in cells]
        pens = [pen(color, 1.4, dashed=True) if c.noisy else pg.mkPen(color) for c in cells]
        bars = pg.BarGraphItem(x=x, height=heights, width=width * 0.92, brushes=brushes, pens=pens)
        item.addItem(bars)
        self.bars[name] = bars
        failed = [xi for xi, c in zip(x, cells) if c.identical is False]
        markers = pg.ScatterPlotItem(
            x=failed, y=[0.0] * len(failed), symbol="x", size=14, pen=pg.mkPen(RED, width=2.5), brush=pg.mkBrush(RED)
        )
        item.addItem(markers)
        self.markers[name] = markers


def bar_slots(prompts: list[tuple[str, list[CellResult]]], ks: tuple[int, ...]) -> list[CellK]:
    """The chart's bar groups, left to right: each K, then auto K when any prompt has that cell."""
    dynamic = any(c.k == AUTO for _, cells in prompts for c in cells)
    return [*ks, *((AUTO,) if dynamic else ())]


def tick_text(k: CellK) -> str:
    """A bar group's axis label: 'K=3' or 'auto'."""
    return AUTO if k == AUTO else f"K={k}"
