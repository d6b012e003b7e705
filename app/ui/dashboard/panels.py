"""The dashboard's four charts: throughput, acceptance, memory and power; each redraws from buffers."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from app.system.ringbuffer import RingBuffer, RoundSeries

from .charts import (BLUE, BLUE_LIGHT, GREEN, GREEN_LIGHT, GREY, ORANGE, PURPLE, RED, TEAL, ChartCard,
                     horizontal_line, make_plot, pen)

GB = 1e9
MEMORY_COLUMNS = ("time", "active", "peak", "available", "rss")
POWER_COLUMNS = ("time", "percent", "on_battery")


def set_curve(curve: pg.PlotDataItem, x: np.ndarray, y: np.ndarray) -> None:
    """setData with gaps at NaN; a curve with no finite value is cleared (pyqtgraph warns on all-NaN)."""
    if np.isfinite(y).any():
        curve.setData(x, y, connect="finite")
    else:
        curve.setData([], [])


class ThroughputChart(ChartCard):
    """Decode tok/s of each round, the rolling speed, and plain decoding as the break-even line."""

    def __init__(self, parent=None):
        super().__init__("Decode speed", make_plot("tok/s", "round"),
                         "No speculative rounds yet.\nSend a message with Draft or MTP on.",
                         [(BLUE_LIGHT, "dot", "per round"), (BLUE, "line", "rolling"),
                          (RED, "dashed", "plain decode")], parent)
        item = self.plot.getPlotItem()
        self.round_curve = item.plot(pen=pen(BLUE_LIGHT, 1.2), symbol="o", symbolSize=5,
                                     symbolBrush=BLUE_LIGHT, symbolPen=None, antialias=True)
        self.rolling_curve = item.plot(pen=pen(BLUE, 2.6), antialias=True)
        self.baseline_line = horizontal_line(RED)
        self.baseline_line.hide()
        item.addItem(self.baseline_line)

    def redraw(self, rounds: RoundSeries) -> None:
        """Replot from the round series."""
        x = rounds.indices()
        set_curve(self.round_curve, x, rounds.tokens_per_s())
        set_curve(self.rolling_curve, x, rounds.rolling_tokens_per_s())

    def set_baseline(self, tps: float | None) -> None:
        """Move (or hide) the plain-decode line."""
        self.baseline_line.setVisible(tps is not None)
        if tps is not None:
            self.baseline_line.setValue(tps)
            self.baseline_line.label.setFormat(f"plain decode {tps:.1f} tok/s")


class AcceptanceChart(ChartCard):
    """Each round's acceptance as bars, and the acceptance of all rounds so far as a line."""

    def __init__(self, parent=None):
        super().__init__("Acceptance", make_plot("% of drafted tokens", "round"),
                         "Acceptance appears once the target checks drafts.",
                         [(GREEN_LIGHT, "bar", "per round"), (GREEN, "line", "cumulative")], parent)
        item = self.plot.getPlotItem()
        item.setYRange(0, 105, padding=0)
        item.getViewBox().setLimits(yMin=-5, yMax=110)
        self.round_curve = item.plot(stepMode="center", fillLevel=0,
                                     brush=pg.mkBrush(GREEN_LIGHT), pen=pen(GREEN_LIGHT, 1))
        self.cumulative_curve = item.plot(pen=pen(GREEN, 2.6), antialias=True)

    def redraw(self, rounds: RoundSeries) -> None:
        """Replot from the round series (percent)."""
        x = rounds.indices()
        edges = np.concatenate((x - 0.4, x[-1:] + 0.4)) if len(x) else np.zeros(0)
        heights = np.nan_to_num(rounds.acceptance() * 100)
        if len(x):
            self.round_curve.setData(edges, heights)
        else:
            self.round_curve.setData([], [])
        set_curve(self.cumulative_curve, x, rounds.cumulative_acceptance() * 100)


class MemoryChart(ChartCard):
    """MLX active and peak memory and the system's available memory over time, with the weights marked."""

    def __init__(self, parent=None):
        super().__init__("Memory", make_plot("GB", date_axis=True), "Reading memory…",
                         [(BLUE, "line", "MLX active"), (PURPLE, "line", "MLX peak"),
                          (TEAL, "line", "system available"), (ORANGE, "dashed", "weights")], parent)
        item = self.plot.getPlotItem()
        self.curves = {
            "active": item.plot(pen=pen(BLUE, 2.2), antialias=True),
            "peak": item.plot(pen=pen(PURPLE, 1.6), antialias=True),
            "available": item.plot(pen=pen(TEAL, 1.6), antialias=True),
        }
        self.weights_line = horizontal_line(ORANGE)
        self.weights_line.hide()
        item.addItem(self.weights_line)
        self.working_set_line = horizontal_line(GREY, "GPU working-set limit")
        self.working_set_line.hide()
        item.addItem(self.working_set_line)

    def redraw(self, samples: RingBuffer) -> None:
        """Replot from the memory buffer (bytes shown as GB)."""
        data = samples.array()
        for name, curve in self.curves.items():
            set_curve(curve, data[:, 0], data[:, MEMORY_COLUMNS.index(name)] / GB)
        self.show_times(data[:, 0])

    def set_weights(self, n_bytes: int | None) -> None:
        """Mark the loaded weights' size (None hides the line)."""
        self.weights_line.setVisible(bool(n_bytes))
        if n_bytes:
            self.weights_line.setValue(n_bytes / GB)
            self.weights_line.label.setFormat(f"weights {n_bytes / GB:.2f} GB")

    def set_working_set(self, n_bytes: int | None) -> None:
        """Mark Metal's recommended working set (macOS; None hides it)."""
        self.working_set_line.setVisible(bool(n_bytes))
        if n_bytes:
            self.working_set_line.setValue(n_bytes / GB)


class PowerChart(ChartCard):
    """Battery percent over time, green on mains and orange on battery."""

    def __init__(self, parent=None):
        super().__init__("Power", make_plot("battery %", date_axis=True), "Reading power…",
                         [(GREEN, "line", "on mains"), (ORANGE, "line", "on battery")], parent)
        item = self.plot.getPlotItem()
        item.setYRange(0, 105, padding=0)
        dots = {"symbol": "o", "symbolSize": 4, "symbolPen": None}
        self.ac_curve = item.plot(pen=pen(GREEN, 2.4), symbolBrush=GREEN, antialias=True, **dots)
        self.battery_curve = item.plot(pen=pen(ORANGE, 2.4), symbolBrush=ORANGE, antialias=True, **dots)

    def redraw(self, samples: RingBuffer) -> None:
        """Replot: one curve per source, NaN where the other source held (gaps keep them apart)."""
        data = samples.array()
        t, percent, on_battery = data[:, 0], data[:, 1], data[:, 2]
        set_curve(self.ac_curve, t, np.where(on_battery == 0, percent, np.nan))
        set_curve(self.battery_curve, t, np.where(on_battery == 1, percent, np.nan))
        self.show_times(t)
