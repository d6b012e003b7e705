"""The dashboard's widgets: tiles, charts, status and footer, built once and redrawn from the buffers that
Dashboard (dashboard.py) fills from engine events and system readings."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from specchat.system.machine import chip_name

from .. import theme
from ..banner import Banner
from ..plain_words import this_machine
from ..theme_switch import follow
from .api_line import ApiLine
from .bandwidth_line import BandwidthInputs, BandwidthLine, bandwidth_file
from .charts import BLUE, GREEN, ORANGE, PURPLE, TEAL, ChartCard
from .panels import AcceptanceChart, MemoryChart, PowerChart, ThroughputChart
from .plain_baseline import REMEASURE
from .reflow import ChartDeck, ReflowGrid
from .tiles import StatTile, fill_tiles, plural

if TYPE_CHECKING:
    from specchat.engine.events import GenerationStats
    from specchat.paths import AppPaths
    from specchat.system.power import PowerStatus
    from specchat.system.ringbuffer import RingBuffer, RoundSeries
    from specchat.tuning.reference import Reference

    from .confidence import ConfidenceHistory
    from .followed import RoundFigures

TILE_WIDTH = 150  # tiles wrap into 3 or 2 columns below six of these
TILE_COLUMNS = (6, 3, 2)
CHART_MIN_SIZE = QSize(290, 180)  # below two of these side by side, the charts go into tabs


class DashboardView(QWidget):
    """The widgets of a Dashboard; Dashboard supplies the buffers and figures they show."""

    # the body's scroll area: the name hides QWidget.scroll(dx, dy), which nothing calls on the dashboard
    scroll: QScrollArea  # type: ignore[assignment]

    # what Dashboard supplies (declared for the type checker; nothing is set here)
    paths: AppPaths
    rounds: RoundSeries
    confidence: ConfidenceHistory
    memory: RingBuffer
    power: RingBuffer
    last_stats: GenerationStats | None
    last_power: tuple[PowerStatus, bool | None] | None
    _dirty: bool
    bandwidth_inputs: Callable[[], BandwidthInputs]  # PlainBaseline's
    reference: Callable[[], Reference | None]  # PlainBaseline's
    request_baseline: Callable[[], None]
    round_figures: Callable[[], RoundFigures]

    if TYPE_CHECKING:  # PlainBaseline's

        @property
        def baseline_tps(self) -> float | None: ...

    # --- construction ---

    def _build(self) -> None:
        follow(
            self,
            lambda: self.setStyleSheet(
                f"#dashboard, #dashboardBody {{ background: {theme.WINDOW_BG}; }}"
                f" QLabel#dashStatus {{ color: {theme.MUTED}; }}"
            ),
        )
        self.banner = Banner()
        self.tiles = {
            name: StatTile(title, accent)
            for name, title, accent in (
                ("speed", "Decode speed", BLUE),
                ("vs_plain", "vs plain decode", None),  # its edge shows the verdict (tiles._fill_vs_plain)
                ("acceptance", "Acceptance", GREEN),
                ("per_round", "Accepted / round", TEAL),
                ("memory", "MLX memory", PURPLE),
                ("power", "Power", ORANGE),
            )
        }
        self.tile_grid = ReflowGrid(list(self.tiles.values()), TILE_WIDTH, TILE_COLUMNS)
        self.bandwidth_line = BandwidthLine(bandwidth_file(self.paths), chip_name(), self.bandwidth_inputs)
        self.throughput = ThroughputChart()
        self.acceptance = AcceptanceChart()
        self.memory_chart = MemoryChart()
        self.power_chart = PowerChart()
        self.charts = ChartDeck(self._plotted_cards(), CHART_MIN_SIZE)
        self.power_slot = QVBoxLayout()  # the power card as one line, when it has nothing to plot
        self.power_slot.setContentsMargins(0, 0, 0, 0)
        self.status = QLabel("No generation yet.", objectName="dashStatus")  # type: ignore[call-overload]
        self.status.setWordWrap(True)  # a long summary wraps rather than widening the dock
        self.remeasure = QPushButton("Measure plain decode")
        self.remeasure.setToolTip(
            "Measure the current target's plain-decode speed now (speculation off, greedy, "
            "64 tokens after a short warm-up): the reference of 'vs plain decode' and the "
            "break-even line, until this session has its own plain replies"
        )
        self.remeasure.setEnabled(False)
        self.remeasure.clicked.connect(self.request_baseline)
        self.cluster = QLabel("", objectName="dashStatus")  # type: ignore[call-overload]  # a cluster's memory per rank (Connect to server)
        self.cluster.setWordWrap(True)
        self.cluster.setToolTip(
            "MLX memory each rank of the server's cluster holds now and at its peak, "
            "read from the server every few seconds"
        )
        self.cluster.hide()
        self.api_line = ApiLine()  # what the local API served (the server log's records), shown while it serves
        beside = QVBoxLayout()  # the API line under the button: beside a wrapped status line, no taller
        beside.setSpacing(2)
        beside.addStretch(1)
        beside.addWidget(self.remeasure)
        beside.addWidget(self.api_line)
        beside.addStretch(1)
        footer = QHBoxLayout()
        footer.addWidget(self.status, 1)
        footer.addLayout(beside)
        body = QWidget(objectName="dashboardBody")  # type: ignore[call-arg]
        column = self.column = QVBoxLayout(body)
        column.setContentsMargins(8, 8, 8, 8)
        column.setSpacing(8)
        column.addWidget(self.banner)
        column.addWidget(self.tile_grid)
        column.addWidget(self.bandwidth_line)
        column.addWidget(self.charts, 1)
        column.addLayout(self.power_slot)
        column.addWidget(self.cluster)
        column.addLayout(footer)
        self._place_power()
        self.scroll = _vertical_scroll(body)  # a screen too short for everything scrolls, never grows the window
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.scroll)

    def set_cluster(self, ranks: tuple, degraded: str | None = None) -> None:
        """Show each rank's memory (RankMemory rows) and why the cluster is degraded; hide for one process."""
        lines = [f"Cluster degraded: {degraded}"] if degraded else []
        lines += [rank.label() for rank in ranks]
        self.cluster.setText("\n".join(lines))
        self.cluster.setStyleSheet(f"color: {theme.REJECT};" if degraded else "")
        self.cluster.setVisible(bool(lines))

    def _plotted_cards(self) -> list[ChartCard]:
        cards: list[ChartCard] = [self.throughput, self.acceptance, self.memory_chart]
        return cards if self.power_chart.compact else cards + [self.power_chart]

    def _place_power(self) -> None:
        """The power card among the charts when it plots a battery, else one line below them."""
        self.charts.set_cards(self._plotted_cards())
        if self.power_chart.compact and self.power_slot.indexOf(self.power_chart) < 0:
            self.power_slot.addWidget(self.power_chart)
            self.power_chart.show()

    # --- drawing ---

    def _redraw_if_dirty(self) -> None:
        if self._dirty:
            self.redraw()

    def redraw(self) -> None:
        """Redraw every chart and tile from the buffers."""
        self._dirty = False
        self.throughput.redraw(self.rounds)
        self.throughput.set_baseline(self.baseline_tps)
        self.acceptance.redraw(self.rounds, self.confidence)
        self.memory_chart.redraw(self.memory)
        self.power_chart.redraw(self.power)
        self._redraw_empty_states()
        self._redraw_tiles()
        self._settle()

    def _settle(self) -> None:
        """Lay out new texts now rather than on a busy event loop's later turn: the power line's height first
        (its note may have shrunk to one line), then the column it sits in."""
        for layout in (self.power_chart.column, self.column):
            layout.activate()

    def _redraw_empty_states(self) -> None:
        has_rounds = len(self.rounds) > 0
        plain = self.last_stats is not None and self.last_stats.mode == "baseline" and not has_rounds
        note = "Plain decoding has no speculative rounds." if plain else None
        self.throughput.set_empty(None if has_rounds else note or self.throughput_empty_text())
        self.acceptance.set_empty(None if has_rounds else note or "Acceptance appears once the target checks drafts.")
        self.memory_chart.set_empty(None if len(self.memory) else "Reading memory…")
        self.power_chart.set_empty(self._power_empty_text())
        self.power_chart.note.setToolTip(f"Reported: {self.last_power[0].detail}" if self.last_power else "")
        self._place_power()
        self.acceptance.set_caption(self._per_round_caption())
        self.throughput.caption.setText(f"rolling: last {plural(self.rounds.window, 'round')}")

    def throughput_empty_text(self) -> str:
        """What the throughput chart says before any round."""
        return "No speculative rounds yet.\nSend a message with a drafter on (Speculation menu)."

    def _power_empty_text(self) -> str | None:
        """The power card's one line when there is no battery level to plot (None: it plots one)."""
        if self.last_power is None:
            return "Reading power…"
        status = self.last_power[0]
        if status.percent is not None or len(self.power) and not all(math.isnan(p) for p in self.power.column(1)):
            return None
        if status.source == "ac":
            return "No battery: on mains power."
        return f"Power source unknown: the system did not say whether {this_machine()} runs on mains or battery."

    def _per_round_caption(self) -> str:
        per_round = self.round_figures().per_round
        return "" if per_round is None else f"mean {per_round:.2f} accepted / round"

    def _redraw_tiles(self) -> None:
        fill_tiles(self)
        self.bandwidth_line.refresh()
        ref = self.reference()
        if ref is not None:
            self.remeasure.setText(f"{REMEASURE} (stale)" if ref.stale else REMEASURE)
        self.tile_grid.refit()  # a longer detail line may need a taller row


def _vertical_scroll(body: QWidget) -> QScrollArea:
    """body in a scroll area that scrolls up and down only; as wide as body's minimum at least."""
    scroll = QScrollArea()
    scroll.setWidget(body)
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    bar = scroll.verticalScrollBar().sizeHint().width()
    scroll.setMinimumWidth(body.minimumSizeHint().width() + bar)
    return scroll
