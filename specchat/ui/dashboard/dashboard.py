"""The dashboard: live throughput, acceptance, memory and power, redrawn on a timer from ring buffers."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict

from PySide6.QtCore import QSize, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from specchat.engine.events import Failed, Finished, GenerationStats, RoundResult
from specchat.engine.summary import speculation_text, stop_text
from specchat.paths import AppPaths
from specchat.server.request_summary import RequestSummary, figures_text
from specchat.system.machine import chip_name
from specchat.system.memory import MemorySample
from specchat.system.power import PowerStatus
from specchat.system.ringbuffer import RingBuffer, RoundSeries
from specchat.tuning.baseline import BaselineCache
from specchat.tuning.reference import (
    EARLIER,
    MEASURED,
    MIN_REPLY_TOKENS,
    PlainReference,
    PlainSample,
    Reference,
    parse_time,
)
from specchat.ui.chat.footer import MODE_NAMES

from .. import theme
from ..banner import Banner
from ..plain_words import this_machine
from ..tasks import TaskRunner
from ..theme_switch import follow
from .api_line import ApiLine
from .bandwidth_line import BandwidthInputs, BandwidthLine, bandwidth_file, weight_bytes_of
from .charts import BLUE, GREEN, ORANGE, PURPLE, TEAL, ChartCard
from .confidence import ConfidenceHistory
from .followed import API, CHAT, Follower, RoundFigures, Step
from .panels import (
    MEMORY_COLUMNS,
    POWER_COLUMNS,
    AcceptanceChart,
    MemoryChart,
    PowerChart,
    ThroughputChart,
)
from .poller import SystemPoller
from .reflow import ChartDeck, ReflowGrid
from .tiles import StatTile, fill_tiles, plural

log = logging.getLogger(__name__)
REDRAW_INTERVAL_MS = 250
SOURCE_NAMES = {CHAT: "chat reply", API: "API request"}  # where the figures come from
TILE_WIDTH = 150  # tiles wrap into 3 or 2 columns below six of these
TILE_COLUMNS = (6, 3, 2)
CHART_MIN_SIZE = QSize(290, 180)  # below two of these side by side, the charts go into tabs
MIN_TOKENS_FOR_BASELINE = MIN_REPLY_TOKENS  # a plain-decode reply this long counts as a plain-decode sample
REMEASURE = "Re-measure plain decode"
NOT_COMPARABLE = "speed figures are not comparable with runs on mains power at full speed."


def shared_text(stats: GenerationStats) -> str:
    """' · shared each round with 2.5 other requests on average' for a generation batched with others, else ''."""
    if stats.batch_rows_mean <= 1:
        return ""
    extra = stats.batch_rows_mean - 1
    others = f"{extra:.1f}".removesuffix(".0") if extra >= 0.1 else f"{extra:.2g}"  # a few shared rounds: not "0"
    noun = "request" if others == "1" else "requests"
    return f" · shared each round with {others} other {noun} on average"


class Dashboard(QWidget):
    """Feed on_event() with the worker's engine events; the charts redraw on a timer, never per token."""

    baselineRequested = Signal(str)  # model key: measure its plain-decode speed, then call set_baseline_tps
    # the body's scroll area: the name hides QWidget.scroll(dx, dy), which nothing calls on the dashboard
    scroll: QScrollArea  # type: ignore[assignment]

    def __init__(
        self,
        paths: AppPaths | None = None,
        parent=None,
        *,
        poller: SystemPoller | None = None,
        runner: TaskRunner | None = None,
        redraw_interval_ms: int = REDRAW_INTERVAL_MS,
        start_polling: bool = True,
    ):
        super().__init__(parent)
        self.setObjectName("dashboard")
        self.paths = paths or AppPaths.default()
        self.baselines = BaselineCache.for_paths(self.paths)
        self.rounds = RoundSeries()  # the followed generation's rounds: the tiles and the charts read only these
        self.drafting_rounds = 0  # how many of them drafted (K >= 1)
        self.follower = Follower()  # which generation is on screen: one at a time, keyed by job id
        self.confidence = ConfidenceHistory()  # the rounds' drafts by the drafter's confidence, and early stops
        self.memory = RingBuffer(3600, len(MEMORY_COLUMNS))
        self.power = RingBuffer(720, len(POWER_COLUMNS))
        self.model_key: str | None = None
        self.plain = PlainReference()  # the session's plain-decode samples: the reference of "vs plain"
        self.last_plain_sample: PlainSample | None = None  # the last reply's own sample (never its own reference)
        self.last_stats: GenerationStats | None = None
        self.last_memory: MemorySample | None = None
        self.last_power: tuple[PowerStatus, bool | None] | None = None
        self.weights_bytes: int | None = None
        self.target_weight_bytes: int | None = None  # the target's weight files: what plain decoding reads per token
        self._generating = False
        self.source = CHAT  # what the last figures came from: "chat" or "api"
        self.job_id: int | None = None  # ... and its job id (None: not given)
        self._dirty = True
        self._build()
        self.poller = poller or SystemPoller(self, runner=runner)  # runner: the worker pool it reads power on
        self.poller.memorySampled.connect(self.on_memory)
        self.poller.powerRead.connect(self.on_power)
        self.redraw_timer = QTimer(self, interval=redraw_interval_ms, timeout=self._redraw_if_dirty)  # type: ignore[call-arg]
        self.redraw_timer.start()
        if start_polling:
            self.poller.start()
        self.redraw()

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

    # --- inputs ---

    @Slot(object)
    def on_event(self, event, source: str = CHAT, job_id: int | None = None) -> None:
        """Take one engine event (TextChunk, RoundResult, PrefillProgress, Finished, Failed) of a chat reply
        or (source "api") of an API request, with its job id. The dashboard follows one generation at a time
        (followed.Follower): another's events, interleaved in a shared batch, are not shown anywhere."""
        terminal = isinstance(event, (Finished, Failed))
        step = self.follower.take(source, job_id, terminal)
        if step is Step.SKIP:
            return
        if step is Step.START:
            self.source, self.job_id = source, job_id
            self.rounds.clear()
            self.confidence.clear()
            self.drafting_rounds = 0
            self._generating = not terminal
            if not terminal:
                self.status.setText(f"Generating {self.source_name}…" if source == API else "Generating…")
        if isinstance(event, Finished):
            self._generating = False
            self._finished(event)
        elif isinstance(event, Failed):
            self._generating = False
            self.status.setText(f"Last {self.source_name} failed: {event.message}")
        elif isinstance(event, RoundResult):
            self.rounds.add(event)
            self.confidence.add(event)
            self.drafting_rounds += event.num_draft_tokens > 0
        self._dirty = True

    def round_figures(self) -> RoundFigures:
        """The followed generation's counts: what every tile and caption about rounds says."""
        return RoundFigures.of(self.rounds, self.drafting_rounds)

    @property
    def generating(self) -> bool:
        """True from a reply's first event until its Finished or Failed."""
        return self._generating

    @property
    def source_name(self) -> str:
        """What the figures are from: 'chat reply', or 'API request #12' (which one, when its id is known)."""
        name = SOURCE_NAMES[self.source]
        return f"{name} #{self.job_id}" if self.source == API and self.job_id is not None else name

    @Slot(int, object)
    def on_request_event(self, request_id: int, event) -> None:
        """A chat reply's event: EngineClient.event carries (request id, event)."""
        self.on_event(event, CHAT, request_id)

    @Slot(int, object)
    def on_api_event(self, job_id: int, event) -> None:
        """An API request's event (the server's requestEvent: job id, event)."""
        self.on_event(event, API, job_id)

    @Slot(object)
    def on_api_summary(self, summary: RequestSummary) -> None:
        """The server log's totals (RequestLogModel.summaryChanged) for the API line; when its last record is the
        followed API request's, now ended, the status line says the record's figures, as the log window does."""
        self.api_line.show_summary(summary)
        last = summary.last
        if last is not None and self.source == API and self.job_id in last.job_ids and not self.generating:
            self.status.setText(f"Last {self.source_name}: {figures_text(last)}")

    @Slot(object)
    def on_memory(self, sample: MemorySample) -> None:
        """Add a memory reading."""
        self.last_memory = sample
        self.memory.append(
            sample.time,
            sample.mlx_active_bytes,
            sample.mlx_peak_bytes,
            sample.system_available_bytes,
            sample.process_rss_bytes,
        )
        self.memory_chart.set_working_set(sample.gpu_working_set_bytes)
        self._dirty = True

    @Slot(object, object)
    def on_power(self, status: PowerStatus, low_power: bool | None = None) -> None:
        """Add a power reading; show or hide the not-comparable banner."""
        self.last_power = (status, low_power)
        on_battery = {"battery": 1.0, "ac": 0.0}.get(status.source)
        self.power.append(time.time(), status.percent, on_battery)
        self._update_banner(status, low_power)
        self._dirty = True

    def set_model(self, model_key: str | None) -> None:
        """The current target (e.g. its resolved folder); asks for a measurement when none is cached."""
        self.model_key = model_key
        self.target_weight_bytes = weight_bytes_of(model_key)  # None for a server's model: no folder here
        self.last_plain_sample = None
        entry = self.baselines.get(model_key) if model_key else None
        known = any(s.model_key == model_key for s in self.plain.samples)
        if model_key and entry is not None and not known:
            self.plain.add_measurement(
                model_key,
                entry.tokens_per_s,
                EARLIER,
                parse_time(entry.measured_at),
                entry.sampling,
                entry.power_source,
            )
        self.remeasure.setEnabled(model_key is not None)
        self.remeasure.setText(REMEASURE if entry or known else "Measure plain decode")
        self._dirty = True
        if model_key and entry is None and not known:
            self.baselineRequested.emit(model_key)

    def set_baseline_tps(
        self, model_key: str, tps: float, source: str = "measured", sampling: str | None = None
    ) -> None:
        """A fresh plain-decode measurement of a model: cached, and at once the one reference of this target
        (until plain replies newer than it): what the session had before it, it replaces."""
        power = self.power_source()
        self._remember(model_key, tps, source, power, sampling)
        self.plain.samples = [s for s in self.plain.samples if s.model_key != model_key]
        if self.last_plain_sample is not None and self.last_plain_sample.model_key == model_key:
            self.last_plain_sample = None
        self.plain.add_measurement(model_key, tps, MEASURED, sampling=sampling, power_source=power)
        if model_key == self.model_key:
            self.remeasure.setText(REMEASURE)
        self._dirty = True

    @property
    def baseline_tps(self) -> float | None:
        """The plain-decode speed the last reply is compared with (None: nothing for this target)."""
        ref = self.reference()
        return ref.tokens_per_s if ref else None

    def reference(self) -> Reference | None:
        """The plain-decode reference for the last reply (or the next one): same target, sampling and power."""
        stats = self.last_stats
        return self.plain.reference(
            self.model_key,
            stats.sampling if stats else None,
            self.power_source(),
            stats.prompt_tokens if stats else None,
            self.last_plain_sample,
        )

    def power_source(self) -> str | None:
        """'ac' or 'battery' from the last power reading; None while unknown."""
        source = self.last_power[0].source if self.last_power else None
        return source if source in ("ac", "battery") else None

    def bandwidth_inputs(self) -> BandwidthInputs:
        """What the bandwidth line is computed from: the target's weight bytes, the plain-decode reference, the
        last speculative reply's speed and the machine's measured bandwidth."""
        stats = self.last_stats
        speculative = stats is not None and stats.mode != "baseline" and not self.generating
        spec_tps = stats.decode_tokens_per_s if speculative and stats is not None else None
        return BandwidthInputs(self.target_weight_bytes, self.baseline_tps, spec_tps, self.bandwidth_line.bandwidth)

    def set_weights_bytes(self, n_bytes: int | None) -> None:
        """Mark the loaded models' weight size on the memory chart."""
        self.weights_bytes = n_bytes
        self.memory_chart.set_weights(n_bytes)
        self._dirty = True

    def request_baseline(self) -> None:
        """Ask (baselineRequested) for a fresh plain-decode measurement of the current model."""
        if self.model_key:
            self.baselineRequested.emit(self.model_key)

    def clear(self) -> None:
        """Forget the rounds and the last generation (memory and power history stay)."""
        self.rounds.clear()
        self.confidence.clear()
        self.drafting_rounds = 0
        self.follower.clear()
        self.last_stats = None
        self._generating = False
        self.status.setText("No generation yet.")
        self._dirty = True

    def stop(self) -> None:
        """Stop the timers and polling (call before the app quits)."""
        self.redraw_timer.stop()
        self.poller.stop()

    def _finished(self, event: Finished) -> None:
        stats = self.last_stats = event.stats
        mode = "Plain decoding" if stats.mode == "baseline" else MODE_NAMES.get(stats.mode, stats.mode)
        k = f", {speculation_text(asdict(stats))}" if stats.mode != "baseline" else ""
        ended = stop_text(asdict(stats), event.cancelled) or "ended"
        self.status.setText(
            f"Last {self.source_name}: {mode}{k} · {stats.generated_tokens} tokens · "
            f"{stats.decode_tokens_per_s:.1f} tok/s decode{shared_text(stats)} · {ended}"
        )
        self.last_plain_sample = None
        if (
            stats.mode == "baseline"
            and not event.cancelled
            and self.model_key
            and stats.generated_tokens >= MIN_TOKENS_FOR_BASELINE
        ):
            self.last_plain_sample = self.plain.add_reply(
                self.model_key,
                stats.decode_tokens_per_s,
                stats.generated_tokens,
                stats.prompt_tokens,
                stats.sampling,
                self.power_source(),
            )
            if self.last_plain_sample is not None:  # the next app start finds this target's plain speed
                self._remember(
                    self.model_key, stats.decode_tokens_per_s, "plain-decode reply", self.power_source(), stats.sampling
                )
                self.remeasure.setText(REMEASURE)

    def _remember(self, model_key: str, tps: float, source: str, power: str | None, sampling: str | None) -> None:
        """Cache a plain-decode speed for the next start; a cache that cannot be written (a full disk) only
        costs a measurement next time: logged, not raised."""
        try:
            self.baselines.put(model_key, tps, source, power, sampling)
        except OSError as error:
            log.warning("could not cache the plain-decode speed of %s: %s", model_key, error)

    def _update_banner(self, status: PowerStatus, low_power: bool | None) -> None:
        """One power notice at a time: a new reading's notice replaces the last one (the banner stacks
        messages), and a comparable reading takes it away."""
        notice = _power_notice(status, low_power)
        current = self.banner.message if self.banner.level else None
        if notice == current:
            return
        if current is not None:
            self.banner.dismiss()
        if notice is not None:
            self.banner.show_message(notice, "warning")

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


def _power_notice(status: PowerStatus, low_power: bool | None) -> str | None:
    """Why speed figures are not comparable now (battery, low-power mode); None when they are."""
    if status.source == "battery":
        shown = f" ({status.percent:.0f}%)" if status.percent is not None else ""
        low = " with low-power mode on" if low_power else ""
        return f"On battery power{shown}{low}: {NOT_COMPARABLE}"
    if low_power:
        return f"Low-power mode is on: {NOT_COMPARABLE}"
    return None


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
