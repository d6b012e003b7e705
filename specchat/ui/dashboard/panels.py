"""The dashboard's four charts: throughput, acceptance, memory and power; each redraws from buffers."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy

from specchat.system.ringbuffer import RingBuffer, RoundSeries

from .charts import (
    BLUE,
    BLUE_LIGHT,
    GREEN,
    GREEN_LIGHT,
    GREY,
    HEADROOM,
    ORANGE,
    PURPLE,
    RED,
    TEAL,
    ChartCard,
    ViewSwitch,
    horizontal_line,
    make_plot,
    pen,
    style_axis,
)
from .confidence import CONFIDENCE_EMPTY, CONFIDENCE_LEGEND, ConfidenceHistory, ConfidencePlot

GB = 1e9
MEMORY_COLUMNS = ("time", "active", "peak", "available", "rss")
POWER_COLUMNS = ("time", "percent", "on_battery")
FLOOR = 0.06  # a speed chart's view reaches this share of its top below 0: 0 is labelled, a point at 0 shows
THROUGHPUT_LEGEND = [(BLUE_LIGHT, "dot", "per round"), (BLUE, "line", "rolling")]
ROUND_LEGEND = [(GREEN_LIGHT, "bar", "per round"), (GREEN, "line", "cumulative")]
VIEWS = ("by round", "by confidence")


def highest(*values) -> float | None:
    """The largest finite value among arrays and numbers (None when there is none)."""
    finite = [np.asarray(v, dtype=float).ravel() for v in values if v is not None]
    finite = [v[np.isfinite(v)] for v in finite]
    tops = [float(v.max()) for v in finite if v.size]
    return max(tops) if tops else None


def fit_y(view: pg.ViewBox, top: float | None, floor: float = 0.0) -> None:
    """From zero (or floor × top below it) to a little above top, so marker labels above their lines stay
    inside; auto when unknown."""
    if top is None or top <= 0:
        view.enableAutoRange(y=True)
    else:
        view.setYRange(-top * floor, top * HEADROOM, padding=0)


def set_curve(curve: pg.PlotDataItem, x: np.ndarray, y: np.ndarray) -> None:
    """setData with gaps at NaN; a curve with no finite value is cleared (pyqtgraph warns on all-NaN)."""
    if np.isfinite(y).any():
        curve.setData(x, y, connect="finite")
    else:
        curve.setData([], [])


class ThroughputChart(ChartCard):
    """Decode tok/s of each round, the rolling speed, and plain decoding as the break-even line."""

    def __init__(self, parent=None):
        super().__init__(
            "Decode speed",
            make_plot("tok/s", "round", first_label=1, from_zero=True),
            "No speculative rounds yet.\nSend a message with a drafter on (Speculation menu).",
            [*THROUGHPUT_LEGEND, (RED, "dashed", "plain decode")],
            parent,
        )
        item = self.plot.getPlotItem()
        self.round_curve = item.plot(
            pen=pen(BLUE_LIGHT, 1.2), symbol="o", symbolSize=5, symbolBrush=BLUE_LIGHT, symbolPen=None, antialias=True
        )
        self.rolling_curve = item.plot(pen=pen(BLUE, 2.6), antialias=True)
        self.baseline_line = horizontal_line(RED)
        self.baseline_line.hide()
        item.addItem(self.baseline_line)
        self._per_round, self._baseline = np.zeros(0), None

    def redraw(self, rounds: RoundSeries) -> None:
        """Replot from the round series."""
        x = rounds.indices()
        self._per_round = rounds.tokens_per_s()
        set_curve(self.round_curve, x, self._per_round)
        set_curve(self.rolling_curve, x, rounds.rolling_tokens_per_s())
        self.show_rounds(x)
        self._fit()

    def set_baseline(self, tps: float | None) -> None:
        """Move (or hide) the plain-decode line; its speed is said in the legend, where it covers no data."""
        self.baseline_line.setVisible(tps is not None)
        if tps != self._baseline:
            known = f"plain decode {tps:.1f}\u00a0tok/s" if tps is not None else "plain decode"
            self.set_legend([*THROUGHPUT_LEGEND, (RED, "dashed", known)])
        self._baseline = tps
        if tps is not None:
            self.baseline_line.setValue(tps)
        self._fit()

    def _fit(self) -> None:
        """The plain-decode line stays in view even above every round; 0 is labelled."""
        fit_y(self.plot.getPlotItem().getViewBox(), highest(self._per_round, self._baseline), FLOOR)


class AcceptanceChart(ChartCard):
    """Each round's acceptance as bars and the acceptance of all rounds so far as a line; or (by confidence)
    the acceptance of the drafts of each tenth of the drafter's confidence."""

    def __init__(self, parent=None):
        super().__init__(
            "Acceptance",
            make_plot("% of drafted tokens", "round", first_label=1),
            "Acceptance appears once the target checks drafts.",
            ROUND_LEGEND,
            parent,
        )
        item = self.plot.getPlotItem()
        item.setYRange(0, 105, padding=0)
        item.getViewBox().setLimits(yMin=-5, yMax=110)
        self.round_curve = item.plot(
            stepMode="center", fillLevel=0, brush=pg.mkBrush(GREEN_LIGHT), pen=pen(GREEN_LIGHT, 1)
        )
        self.cumulative_curve = item.plot(pen=pen(GREEN, 2.6), antialias=True)
        self.confidence = ConfidencePlot()
        self.body.addWidget(self.confidence.widget, 0, 0)
        self.confidence.widget.hide()
        self.empty.raise_()  # the note stays above both views
        self.switch = ViewSwitch(VIEWS)
        self.switch.setToolTip("Acceptance by round, or by the drafter's confidence in each draft (Auto K)")
        self.switch.chosen.connect(lambda index: self.show_confidence(index == 1))
        self._place_switch()
        self.by_confidence = False
        self._round_empty: str | None = None
        self._round_caption = ""
        self._history = ConfidenceHistory()

    def _place_switch(self) -> None:
        """The switch beside the legend (the header has no room for it in a narrow dock)."""
        self.column.removeWidget(self.legend)
        row = QHBoxLayout()
        row.setSpacing(8)
        row.addWidget(self.legend, 1)
        row.addWidget(self.switch)
        self.column.insertLayout(1, row)

    def plots(self) -> list[pg.PlotWidget]:
        """Both views' plots."""
        return [self.plot, self.confidence.widget]

    def redraw(self, rounds: RoundSeries, history: ConfidenceHistory | None = None) -> None:
        """Replot from the round series (percent) and, by confidence, from the rounds' confidences."""
        x = rounds.indices()
        edges = np.concatenate((x - 0.4, x[-1:] + 0.4)) if len(x) else np.zeros(0)
        heights = np.nan_to_num(rounds.acceptance() * 100)
        if len(x):
            self.round_curve.setData(edges, heights)
        else:
            self.round_curve.setData([], [])
        set_curve(self.cumulative_curve, x, rounds.cumulative_acceptance() * 100)
        self.show_rounds(x)
        if history is not None:
            self._history = history
        self.confidence.redraw(self._history)
        self._show_view()

    def show_confidence(self, on: bool) -> None:
        """Plot acceptance by the drafter's confidence (True) or by round (False)."""
        if on != self.by_confidence:
            self.by_confidence = on
            self.switch.buttons[int(on)].setChecked(True)
            self._show_view()

    def set_empty(self, text: str | None) -> None:
        """The by-round view's note (None: it has rounds); the confidence view has its own."""
        self._round_empty = text
        self._show_view()

    def set_caption(self, text: str) -> None:
        """The by-round view's caption (the confidence view counts its drafts)."""
        self._round_caption = text
        self._show_view()

    def _show_view(self) -> None:
        on = self.by_confidence
        self.plot.setVisible(not on)
        self.confidence.widget.setVisible(on)
        self.set_legend(CONFIDENCE_LEGEND if on else ROUND_LEGEND)
        if on:
            checked = sum(self._history.verified)
            super().set_empty(None if self._history.has_confidences else CONFIDENCE_EMPTY)
            self.caption.setText(f"{checked} checked draft{'' if checked == 1 else 's'}" if checked else "")
        else:
            super().set_empty(self._round_empty)
            self.caption.setText(self._round_caption)


class MemoryChart(ChartCard):
    """MLX active and peak memory (left axis, with the weights marked) and the system's available memory
    (right axis, its own scale: many GB of free RAM would flatten the MLX lines into the floor)."""

    def __init__(self, parent=None):
        super().__init__(
            "Memory",
            make_plot("MLX GB", date_axis=True),
            "Reading memory…",
            [
                (BLUE, "line", "MLX active"),
                (PURPLE, "line", "MLX peak"),
                (ORANGE, "dashed", "weights"),
                (TEAL, "line", "system available (right)"),
            ],
            parent,
        )
        item = self.plot.getPlotItem()
        self.system_view = pg.ViewBox(enableMenu=False)
        item.showAxis("right")
        style_axis(item.getAxis("right"))
        item.getAxis("right").setLabel("system GB", color=TEAL)
        item.scene().addItem(self.system_view)
        item.getAxis("right").linkToView(self.system_view)
        self.system_view.setXLink(item.getViewBox())
        item.getViewBox().sigResized.connect(self._align_views)
        self.curves = {
            "active": item.plot(pen=pen(BLUE, 2.2), antialias=True),
            "peak": item.plot(pen=pen(PURPLE, 1.6), antialias=True),
            "available": pg.PlotDataItem(pen=pen(TEAL, 1.6), antialias=True),
        }
        self.system_view.addItem(self.curves["available"])
        self.weights_line = horizontal_line(ORANGE)
        self.weights_line.hide()
        item.addItem(self.weights_line)
        self.working_set_line = horizontal_line(GREY, "GPU working-set limit")
        self.working_set_line.hide()
        self.system_view.addItem(self.working_set_line)
        self._weights_gb: float | None = None
        self._working_set_gb: float | None = None

    def _align_views(self) -> None:
        view = self.plot.getPlotItem().getViewBox()
        self.system_view.setGeometry(view.sceneBoundingRect())
        self.system_view.linkedViewChanged(view, self.system_view.XAxis)

    def redraw(self, samples: RingBuffer) -> None:
        """Replot from the memory buffer (bytes shown as GB); each axis fits its own lines."""
        data = samples.array()
        gb = {name: data[:, MEMORY_COLUMNS.index(name)] / GB for name in self.curves}
        for name, curve in self.curves.items():
            set_curve(curve, data[:, 0], gb[name])
        self.show_times(data[:, 0])
        fit_y(self.plot.getPlotItem().getViewBox(), highest(gb["active"], gb["peak"], self._weights_gb))
        fit_y(self.system_view, highest(gb["available"], self._working_set_gb))

    def set_weights(self, n_bytes: int | None) -> None:
        """Mark the loaded weights' size (None hides the line)."""
        self.weights_line.setVisible(bool(n_bytes))
        self._weights_gb = n_bytes / GB if n_bytes else None
        if n_bytes:
            self.weights_line.setValue(n_bytes / GB)
            self.weights_line.label.setFormat(f"weights {n_bytes / GB:.2f} GB")

    def set_working_set(self, n_bytes: int | None) -> None:
        """Mark Metal's recommended working set on the system axis (macOS; None hides it)."""
        self.working_set_line.setVisible(bool(n_bytes))
        self._working_set_gb = n_bytes / GB if n_bytes else None
        if n_bytes:
            self.working_set_line.setValue(n_bytes / GB)


class PowerChart(ChartCard):
    """Battery percent over time, green on mains and orange on battery. With nothing to plot (no battery)
    it folds into one line: its title and what it knows."""

    def __init__(self, parent=None):
        super().__init__(
            "Power",
            make_plot("battery %", date_axis=True),
            "Reading power…",
            [(GREEN, "line", "on mains"), (ORANGE, "line", "on battery")],
            parent,
        )
        item = self.plot.getPlotItem()
        item.setYRange(0, 105, padding=0)
        dots = {"symbol": "o", "symbolSize": 4, "symbolPen": None}
        self.ac_curve = item.plot(pen=pen(GREEN, 2.4), symbolBrush=GREEN, antialias=True, **dots)
        self.battery_curve = item.plot(pen=pen(ORANGE, 2.4), symbolBrush=ORANGE, antialias=True, **dots)
        self.note = QLabel(objectName="chartCaption")  # type: ignore[call-overload]
        self.note.setWordWrap(True)  # one line where it fits; two rather than cut off in a narrow dock
        self.header_row.insertWidget(1, self.note, 100)  # ahead of the header's stretch
        self.compact = False
        self.set_empty("Reading power…")

    def redraw(self, samples: RingBuffer) -> None:
        """Replot: one curve per source, NaN where the other source held (gaps keep them apart)."""
        data = samples.array()
        t, percent, on_battery = data[:, 0], data[:, 1], data[:, 2]
        set_curve(self.ac_curve, t, np.where(on_battery == 0, percent, np.nan))
        set_curve(self.battery_curve, t, np.where(on_battery == 1, percent, np.nan))
        self.show_times(t)

    def set_empty(self, text: str | None) -> None:
        """Nothing to plot: one line (title and note) instead of an empty chart; else the chart."""
        super().set_empty(text)
        self.compact = bool(text)
        self.note.setText(" ".join(text.split()) if text else "")
        self.note.setVisible(self.compact)
        for part in (self.plot, self.legend, self.caption):
            part.setVisible(not self.compact)
        self.empty.hide()
        if self.compact:  # tighter: the line fits a laptop's narrow dock
            self.column.setContentsMargins(6, 5, 6, 5)
        else:
            self.column.setContentsMargins(12, 10, 12, 10)
        self.header_row.setSpacing(8 if self.compact else 14)
        vertical = QSizePolicy.Policy.Fixed if self.compact else QSizePolicy.Policy.Preferred
        self.setSizePolicy(QSizePolicy.Policy.Preferred, vertical)
