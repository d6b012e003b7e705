"""Shared look of the dashboard's pyqtgraph charts: a titled card with a plot and an empty-state note."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QButtonGroup, QFrame, QGridLayout, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from .. import theme
from ..plain_words import this_machine
from ..theme_switch import follow

BLUE = "#2f6fde"
BLUE_LIGHT = "#a8c1f0"
GREEN = "#1f9d55"
GREEN_LIGHT = "#bfe8cf"
PURPLE = "#8b5cf6"
TEAL = "#0e9f9a"
ORANGE = "#e07b00"
RED = "#d64545"
GREY = "#9aa1ab"
PLOT_MIN_HEIGHT = 130
PLOT_MIN_WIDTH = 200
HEADROOM = 1.2  # a y range this much above the highest value or marker leaves room for the marker's label
MIN_TIME_SPAN_S = 60  # the narrowest time window a chart over time shows
LABEL_GAP_PX = 24  # a round axis' tick nearer than this to the first or last round's label is left out
END_LABEL_PX = 12  # how far the first and last rounds' labels may reach past a round axis' ends
ROUND_MARGIN = 0.5  # a chart over rounds shows this much beside its first and last round (room for the bars)


def card_style() -> str:
    """The chart card's style sheet in the current palette."""
    return (
        f"ChartCard {{ background: {theme.SURFACE}; border: 1px solid {theme.BORDER}; border-radius: 10px; }}"
        f" QLabel#chartTitle {{ color: {theme.TEXT}; font-weight: 600; }}"
        f" QLabel#chartCaption, QLabel#chartLegend {{ color: {theme.MUTED}; font-size: 11px; }}"
        f" QLabel#chartEmpty {{ color: {theme.MUTED}; background: transparent; }}"
    )


def pen(color: str, width: float = 2.0, dashed: bool = False):
    """A cosmetic pen of a colour and width, optionally dashed."""
    style = Qt.PenStyle.DashLine if dashed else Qt.PenStyle.SolidLine
    return pg.mkPen(color=color, width=width, style=style)


class CountAxis(pg.AxisItem):
    """An axis for counts (rounds, draft lengths): ticks at whole numbers only, never "2.5" nor below zero.
    The value 0 is labelled `first_label`: rounds, numbered from 0 by the engine, are counted from 1."""

    def __init__(self, *args, first_label: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self.first_label = first_label
        self.ends: tuple[float, float] | None = None  # the first and last values plotted: always labelled

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 (pyqtgraph's names)
        shift = self.first_label  # ticks fall on round labels (5, 10, ...), not on the engine's indices
        levels = [
            (spacing, [v - shift for v in values if abs(v - round(v)) < 1e-6 and v - shift > -0.5])
            for spacing, values in super().tickValues(minVal + shift, maxVal + shift, size)
            if spacing >= 1
        ]
        if not levels:  # a range under two units: every whole number in it
            low = max(math.ceil(minVal), 0)
            levels = [(1.0, [float(v) for v in range(low, math.floor(maxVal) + 1)])]
        return self._with_ends(levels, minVal, maxVal, size)

    def _with_ends(self, levels: list, low: float, high: float, size: float) -> list:
        """The first and last plotted values join the top level; ticks whose labels would crowd theirs go."""
        ends = [float(v) for v in self.ends or () if low <= v <= high]
        if not ends or size <= 0:
            return levels
        gap = LABEL_GAP_PX * (high - low) / size

        def apart(values: list[float]) -> list[float]:
            return [v for v in values if all(abs(v - end) >= gap for end in ends)]

        (spacing, values), rest = levels[0], levels[1:]
        return [(spacing, sorted({*apart(values), *ends}))] + [(s, apart(v)) for s, v in rest]

    def tickStrings(self, values, scale, spacing):  # noqa: N802 (pyqtgraph's name)
        return [str(round(v) + self.first_label) for v in values]

    def boundingRect(self):  # noqa: N802 (Qt's name)
        # pyqtgraph drops a label reaching past this rect: the first and last rounds' labels may, a little
        return super().boundingRect().adjusted(-END_LABEL_PX, 0, END_LABEL_PX, 0)


class FromZeroAxis(pg.AxisItem):
    """A y axis whose view starts a little below 0 (so 0 is labelled and a point at 0 shows whole): no tick
    below 0."""

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 (pyqtgraph's names)
        levels = super().tickValues(minVal, maxVal, size)
        return [(spacing, [max(v, 0.0) for v in values if v > -spacing / 100]) for spacing, values in levels]


def make_plot(
    y_label: str,
    x_label: str = "",
    date_axis: bool = False,
    first_label: int = 0,
    counts: bool = True,
    from_zero: bool = False,
) -> pg.PlotWidget:
    """A white plot with a light grid and muted axes (the legend lives in the card's header).
    The x axis shows dates (date_axis) or, when labelled, counts (0 labelled first_label) unless not counts;
    from_zero: the y axis has no tick below 0 (see FromZeroAxis)."""
    axes: dict[str, pg.AxisItem] = {}
    if date_axis:
        axes["bottom"] = pg.DateAxisItem(orientation="bottom")
    elif x_label and counts:
        axes["bottom"] = CountAxis(orientation="bottom", first_label=first_label)
    if from_zero:
        axes["left"] = FromZeroAxis(orientation="left")
    plot = pg.PlotWidget(axisItems=axes)
    plot.setMinimumHeight(PLOT_MIN_HEIGHT)
    plot.setMinimumWidth(PLOT_MIN_WIDTH)
    item = plot.getPlotItem()
    if isinstance(axes.get("bottom"), CountAxis):
        item.layout.setContentsMargins(1, 1, END_LABEL_PX, 1)  # room for the last round's label
    item.showGrid(x=True, y=True, alpha=0.12)
    item.setMenuEnabled(False)
    item.hideButtons()
    for name in ("left", "bottom"):
        style_axis(item.getAxis(name))
    follow(plot, lambda: colour_plot(plot, y_label, x_label))
    return plot


def colour_plot(plot: pg.PlotWidget, y_label: str, x_label: str = "") -> None:
    """Background, axes and labels of a plot in the current palette (light or dark)."""
    plot.setBackground(theme.CHART_BG)
    item = plot.getPlotItem()
    for name in ("left", "bottom", "right"):
        axis = item.getAxis(name)
        axis.setPen(pg.mkPen(theme.BORDER))
        axis.setTextPen(pg.mkPen(theme.MUTED))
    item.setLabel("left", y_label, color=theme.MUTED)
    if x_label:
        item.setLabel("bottom", x_label, color=theme.MUTED)
    for line in item.items:  # marker labels drawn over the plot take its background
        if isinstance(line, pg.InfiniteLine) and getattr(line, "label", None) is not None:
            line.label.fill = pg.mkBrush(*theme.CHART_LABEL_FILL)
            line.label.update()


CHART_HELP = {  # each chart's title -> what it plots and how (the title's tooltip)
    "Decode speed": "Tokens per second of each speculative round (tokens it emitted over its draft + verify "
    "time), with a rolling mean; the dashed line is the plain-decode reference.",
    "Acceptance": "By round: share of each round's drafted tokens that the target accepted, in percent. "
    "By confidence (Auto K): the drafts of every round grouped by the drafter's top-1 probability, in tenths; "
    "each bar is the share the target accepted of those it checked (a draft after a refused one is never "
    "checked), its label the number of drafts. A calibrated drafter's bars follow the diagonal.",
    "Memory": "MLX active and peak memory, system memory available and this process's resident size, in GB, "
    "read every second.",
    "Power": f"Battery level in percent and whether {this_machine()} runs on mains power, read from the OS.",
    "Speedup vs plain decoding": "Median tok/s of each K over plain decoding's median, minus 1, in percent; "
    "faded bars are noisy (CV above 5%), a red cross marks output that differed.",
}


def style_axis(axis: pg.AxisItem) -> None:
    """Muted axis lines and small tick labels."""
    small = QFont()
    small.setPointSizeF(8.5)
    axis.setPen(pg.mkPen(theme.BORDER))
    axis.setTextPen(pg.mkPen(theme.MUTED))
    axis.setStyle(tickFont=small)
    axis.enableAutoSIPrefix(False)  # plain units in the label, never "(x0.001)"


SWATCHES = {"line": "━━", "dashed": "╍╍", "dot": "●", "bar": "■", "cross": "✕"}


def legend_html(entries: list[tuple[str, str, str]]) -> str:
    """Rich text for a legend: (colour, kind of swatch, label) entries; it wraps between entries."""
    parts = [
        f'<span style="color:{color}; font-weight:700">{SWATCHES[kind]}</span>&nbsp;{label}'
        for color, kind, label in entries
    ]
    return f'<span style="color:{theme.MUTED}">{"&nbsp;&nbsp; ".join(parts)}</span>'


def horizontal_line(color: str, label: str = "") -> pg.InfiniteLine:
    """A dashed horizontal marker line with its label at the right end."""
    line = pg.InfiniteLine(
        angle=0,
        movable=False,
        pen=pen(color, 1.6, dashed=True),
        label=label,
        labelOpts={
            "position": 0.97,
            "color": color,
            "anchors": [(1, 1), (1, 1)],
            "fill": pg.mkBrush(*theme.CHART_LABEL_FILL),
        },
    )
    line.setZValue(-5)
    return line


def switch_style() -> str:
    """The view switch's style sheet: two small joined buttons, the chosen one filled."""
    return (
        f"QToolButton {{ color: {theme.MUTED}; background: {theme.SURFACE}; border: 1px solid {theme.BORDER};"
        " padding: 1px 6px; font-size: 11px; }"
        " QToolButton#switchFirst { border-top-left-radius: 5px; border-bottom-left-radius: 5px; }"
        " QToolButton#switchLast { border-top-right-radius: 5px; border-bottom-right-radius: 5px; }"
        f" QToolButton:checked {{ color: {theme.TEXT}; background: {theme.SELECTION_BG}; }}"
    )


class ViewSwitch(QWidget):
    """Two or more joined buttons choosing one of a chart's views; `chosen` carries the view's index."""

    chosen = Signal(int)

    def __init__(self, names: Sequence[str], parent=None):
        super().__init__(parent)
        follow(self, lambda: self.setStyleSheet(switch_style()))
        self.group = QButtonGroup(self)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        self.buttons: list[QToolButton] = []
        for index, name in enumerate(names):
            end = "switchFirst" if index == 0 else "switchLast" if index == len(names) - 1 else "switchMiddle"
            button = QToolButton(text=name, checkable=True, checked=index == 0, objectName=end)  # type: ignore[call-arg]
            self.group.addButton(button, index)
            row.addWidget(button)
            self.buttons.append(button)
        self.group.idClicked.connect(self.chosen)

    def choose(self, index: int) -> None:
        """Check a view's button and say so, as a click would."""
        self.buttons[index].click()


class ChartCard(QFrame):
    """A card: a title, a caption on the right, and a plot with a centred note shown when it is empty."""

    def __init__(
        self, title: str, plot: pg.PlotWidget, empty_text: str, legend: Sequence[tuple[str, str, str]] = (), parent=None
    ):
        super().__init__(parent)
        follow(self, lambda: self.setStyleSheet(card_style()))
        self.plot = plot
        self._recent_window = False  # show_times: the x range is the last minute, set by hand
        self.title = QLabel(title, objectName="chartTitle")  # type: ignore[call-overload]
        self.title.setToolTip(CHART_HELP.get(title, ""))
        self.legend = QLabel(legend_html(list(legend)), objectName="chartLegend")  # type: ignore[call-overload]
        self.legend.setWordWrap(True)
        self.caption = QLabel("", objectName="chartCaption")  # type: ignore[call-overload]
        self.caption.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.empty = QLabel(empty_text, objectName="chartEmpty")  # type: ignore[call-overload]
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)
        self.empty.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        header = self.header_row = QHBoxLayout()
        header.setSpacing(14)
        header.addWidget(self.title)
        header.addStretch(1)
        header.addWidget(self.caption)
        body = self.body = QGridLayout()  # the plot's cell: a card may stack more views in it
        body.addWidget(plot, 0, 0)
        body.addWidget(self.empty, 0, 0)  # overlaid on the plot, same cell
        column = self.column = QVBoxLayout(self)  # the card's layout: the header row, legend and plot
        column.setContentsMargins(12, 10, 12, 10)
        column.setSpacing(4)
        column.addLayout(header)
        column.addWidget(self.legend)
        column.addLayout(body, 1)

    def set_legend(self, entries: Sequence[tuple[str, str, str]]) -> None:
        """Replace the legend's (colour, kind of swatch, label) entries."""
        self.legend.setText(legend_html(list(entries)))

    def show_times(self, t) -> None:
        """Charts over time: until the readings span a minute, show the last minute with the newest
        at the right edge (not a second's fractions around one reading); then all of them."""
        item = self.plot.getPlotItem()
        if len(t) and t[-1] - t[0] < MIN_TIME_SPAN_S:
            item.setXRange(t[-1] - MIN_TIME_SPAN_S, t[-1], padding=0.02)
            self._recent_window = True
        elif self._recent_window:
            item.enableAutoRange(x=True)
            self._recent_window = False

    def show_rounds(self, x) -> None:
        """Charts over rounds: exactly the rounds held, half a round either side (one round shows as 0.5 to 1.5),
        never pyqtgraph's range around a single point, which runs into negative rounds; the first and last
        rounds are labelled."""
        item = self.plot.getPlotItem()
        axis = item.getAxis("bottom")
        if isinstance(axis, CountAxis):
            axis.ends = (float(x[0]), float(x[-1])) if len(x) else None
        if len(x):
            item.setXRange(float(x[0]) - ROUND_MARGIN, float(x[-1]) + ROUND_MARGIN, padding=0)

    def plots(self) -> list[pg.PlotWidget]:
        """The card's plots (one, unless a card can switch between views)."""
        return [self.plot]

    def set_empty(self, text: str | None) -> None:
        """Show a note over the plot (None hides it); an empty plot hides its meaningless tick values."""
        self.empty.setVisible(bool(text))
        if text:
            self.empty.setText(text)
        for plot in self.plots():
            item = plot.getPlotItem()
            for name in ("left", "bottom", "right"):
                item.getAxis(name).setStyle(showValues=not text)
