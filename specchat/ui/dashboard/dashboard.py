"""The dashboard: live throughput, acceptance, memory and power, redrawn on a timer from ring buffers."""

from __future__ import annotations

import time
from dataclasses import asdict

from PySide6.QtCore import QTimer, Signal, Slot

from specchat.engine.events import Failed, Finished, GenerationStats, RoundResult
from specchat.engine.summary import speculation_text, stop_text
from specchat.paths import AppPaths
from specchat.server.request_summary import RequestSummary, figures_text
from specchat.system.memory import MemorySample
from specchat.system.power import PowerStatus
from specchat.system.ringbuffer import RingBuffer, RoundSeries
from specchat.tuning.baseline import BaselineCache
from specchat.tuning.reference import PlainReference, PlainSample
from specchat.ui.chat.footer import MODE_NAMES

from ..tasks import TaskRunner
from .confidence import ConfidenceHistory
from .dashboard_view import DashboardView
from .followed import API, CHAT, Follower, RoundFigures, Step
from .panels import MEMORY_COLUMNS, POWER_COLUMNS
from .plain_baseline import PlainBaseline
from .poller import SystemPoller

REDRAW_INTERVAL_MS = 250
SOURCE_NAMES = {CHAT: "chat reply", API: "API request"}  # where the figures come from
NOT_COMPARABLE = "speed figures are not comparable with runs on mains power at full speed."


def shared_text(stats: GenerationStats) -> str:
    """' · shared each round with 2.5 other requests on average' for a generation batched with others, else ''."""
    if stats.batch_rows_mean <= 1:
        return ""
    extra = stats.batch_rows_mean - 1
    others = f"{extra:.1f}".removesuffix(".0") if extra >= 0.1 else f"{extra:.2g}"  # a few shared rounds: not "0"
    noun = "request" if others == "1" else "requests"
    return f" · shared each round with {others} other {noun} on average"


class Dashboard(PlainBaseline, DashboardView):
    """Feed on_event() with the worker's engine events; the charts redraw on a timer, never per token."""

    baselineRequested = Signal(str)  # model key: measure its plain-decode speed, then call set_baseline_tps

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
        self._take_plain_reply(stats, event.cancelled)

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


def _power_notice(status: PowerStatus, low_power: bool | None) -> str | None:
    """Why speed figures are not comparable now (battery, low-power mode); None when they are."""
    if status.source == "battery":
        shown = f" ({status.percent:.0f}%)" if status.percent is not None else ""
        low = " with low-power mode on" if low_power else ""
        return f"On battery power{shown}{low}: {NOT_COMPARABLE}"
    if low_power:
        return f"Low-power mode is on: {NOT_COMPARABLE}"
    return None
