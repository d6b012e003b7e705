"""The sweep view: queue a K sweep for the loaded pair on the engine thread, see the table and chart, keep the best K."""

from __future__ import annotations

import re
from pathlib import Path
from typing import cast

from PySide6.QtCore import QSignalBlocker, QSize, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from specchat.engine.config import LIMITS
from specchat.engine.errors import ConfigError
from specchat.engine.owner import JobFailed
from specchat.paths import AppPaths
from specchat.tuning.best_k import save_sweep
from specchat.tuning.sweep import SweepConfig, SweepRunner, parse_ks
from specchat.tuning.sweep_prompts import BUILTIN_PROMPTS, builtin_prompts
from specchat.tuning.sweep_report import choice_text, write_json
from specchat.tuning.sweep_results import (
    CellDone,
    CellResult,
    RunDone,
    SweepFinished,
    SweepResult,
    SweepStarted,
    cell_name,
)

from .. import theme
from ..banner import Banner
from ..engine_client import QtJob
from ..flow_layout import FlowLayout
from ..job_events import JobHandlers
from ..theme_switch import follow
from .ab_panel import ABPanel
from .suite_view import SuiteView
from .sweep_export import write_csv
from .sweep_table import SpeedupChart, SweepTable
from .tiles import power_words

DEFAULT_KS = "1,2,4,8"
MIN_HEIGHT = 240  # below this the view scrolls
SIDE_BY_SIDE = 900  # from this width the table and the chart sit side by side, else one above the other


def _labelled(text: str, field: QWidget) -> QWidget:
    """A label and its field as one piece that a flow layout keeps together."""
    piece = QWidget()
    row = QHBoxLayout(piece)
    row.setContentsMargins(0, 0, 0, 0)
    row.addWidget(QLabel(text))
    row.addWidget(field)
    return piece


def export_name(result: SweepResult | None, suffix: str) -> str:
    """A file name that says what was swept and when: 'sweep Qwen3-8B draft 2026-12-01.csv'."""
    if result is None:
        return f"sweep.{suffix}"
    parts = ["sweep", Path(result.target).name, result.mode, result.started_at[:10]]
    stem = " ".join(part for part in parts if part)
    return re.sub(r"[^\w\-. ]+", "", stem).strip() + f".{suffix}"


def card_css() -> str:
    """A card's style in the current palette."""
    return f"background: {theme.SURFACE}; border: 1px solid {theme.BORDER}; border-radius: 10px;"


class SweepView(QWidget):
    """Give it the engine client and the loaded pair; Run queues a sweep, "Use best K" saves the result."""

    busyChanged = Signal(bool)  # True while this view's sweep is queued or running
    bestKSaved = Signal(object)  # dict[str, int | "auto"]: the best choice per prompt type just saved
    sweepFinished = Signal(object)  # SweepResult
    controlsChanged = Signal(dict)  # the controls' values (controls()), to remember them across restarts

    def __init__(self, paths: AppPaths | None = None, parent=None, *, read_power=None, machine_info=None, client=None):
        super().__init__(parent)
        self.paths = paths or AppPaths.default()
        self.read_power, self.machine_info = read_power, machine_info
        self.client = None
        self.pair = None
        self.job: QtJob | None = None
        self.result: SweepResult | None = None
        self.cells: dict[str, list[CellResult]] = {}
        self.ks: tuple[int, ...] = ()
        self._wanted_mode = "draft"  # the saved mode, chosen whenever the loaded pair offers it
        self._build()
        self.set_pair(None)
        if client is not None:
            self.set_client(client)

    # --- construction ---

    def _build(self) -> None:
        self.setObjectName("sweepView")
        self._make_controls()
        content = QWidget(objectName="sweepContent")  # type: ignore[call-arg]
        follow(self, lambda: self.setStyleSheet(f"#sweepView, #sweepContent {{ background: {theme.WINDOW_BG}; }}"))
        layout = QVBoxLayout(content)
        layout.setContentsMargins(14, 12, 14, 12)
        layout.setSpacing(10)
        layout.addWidget(self.banner)
        layout.addWidget(self._controls())
        self.results = QSplitter(Qt.Orientation.Vertical)
        self.results.addWidget(self.table)
        self.results.addWidget(self.chart)
        self.results.setChildrenCollapsible(False)
        layout.addWidget(self.results, 3)
        layout.addWidget(self.best_label)
        actions = FlowLayout()
        for button in (self.use_best, *self.exports):
            actions.add(button)
        layout.addLayout(actions)
        ab_card = QFrame(objectName="abFrame")  # type: ignore[call-arg]
        follow(ab_card, lambda: ab_card.setStyleSheet(f"QFrame#abFrame {{ {card_css()} }}"))
        inner = QVBoxLayout(ab_card)
        inner.addWidget(self.ab)
        layout.addWidget(ab_card, 0)
        self.scroller = QScrollArea(widgetResizable=True, frameShape=QFrame.Shape.NoFrame)  # type: ignore[call-arg]
        self.scroller.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.scroller.setWidget(content)
        self.suite = SuiteView(self.paths)  # the other tab: every drafter on every category
        self.tabs = QTabWidget(documentMode=True)
        self.tabs.addTab(self.scroller, "K sweep and A/B")
        self.tabs.addTab(self.suite, "Suite")
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.tabs)
        self._watch_controls()

    def _watch_controls(self) -> None:
        changed = lambda *_: self.controlsChanged.emit(self.controls())  # noqa: E731
        self.mode.activated.connect(changed)
        self.ks_edit.editingFinished.connect(changed)
        for box in (self.reps, self.warmup, self.max_tokens):
            box.valueChanged.connect(changed)
        for check in (*self.prompt_boxes.values(), self.dynamic, self.allow_battery):
            check.toggled.connect(changed)
        self.suite.controlsChanged.connect(changed)

    def controls(self) -> dict:
        """The controls' values as plain JSON: what set_controls takes back."""
        return {
            "mode": self.mode.currentData() or self._wanted_mode,
            "ks": self.ks_edit.text(),
            "reps": self.reps.value(),
            "warmup": self.warmup.value(),
            "max_tokens": self.max_tokens.value(),
            "prompts": [name for name, box in self.prompt_boxes.items() if box.isChecked()],
            "dynamic": self.dynamic.isChecked(),
            "allow_battery": self.allow_battery.isChecked(),
            "suite": self.suite.controls(),
        }

    def set_controls(self, values: dict) -> None:
        """Put saved values back into the controls; a value of the wrong type or range is left at its default."""
        blockers = [QSignalBlocker(w) for w in (self.ks_edit, self.reps, self.warmup, self.max_tokens)]
        if isinstance(values.get("mode"), str):
            self._wanted_mode = values["mode"]
            self._choose_mode()
        if isinstance(values.get("ks"), str):
            self.ks_edit.setText(values["ks"])
        for name, box in (("reps", self.reps), ("warmup", self.warmup), ("max_tokens", self.max_tokens)):
            value = values.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and box.minimum() <= value <= box.maximum():
                box.setValue(value)
        prompts = values.get("prompts")
        if isinstance(prompts, list) and any(name in self.prompt_boxes for name in prompts):
            for name, box in self.prompt_boxes.items():
                box.setChecked(name in prompts)
        for name, check in (("dynamic", self.dynamic), ("allow_battery", self.allow_battery)):
            if isinstance(values.get(name), bool):
                check.setChecked(values[name])
        if isinstance(values.get("suite"), dict):
            self.suite.set_controls(values["suite"])
        del blockers

    def _choose_mode(self) -> None:
        index = self.mode.findData(self._wanted_mode)
        if index >= 0:
            self.mode.setCurrentIndex(index)

    def _make_controls(self) -> None:
        self.banner = Banner()
        self.mode = QComboBox()
        self.ks_edit = QLineEdit(DEFAULT_KS)
        self.ks_edit.setToolTip("Draft lengths to try, separated by commas (1 to 16)")
        self.ks_edit.setMinimumWidth(self.ks_edit.fontMetrics().horizontalAdvance("1,2,4,8,16 ") + 16)
        self.reps = QSpinBox(minimum=1, maximum=50, value=3, prefix="reps ")
        self.warmup = QSpinBox(minimum=0, maximum=10, value=1, prefix="warmup ")
        self.max_tokens = QSpinBox(
            minimum=int(LIMITS["max_tokens"].low), maximum=int(LIMITS["max_tokens"].high), value=128, suffix=" tokens"
        )
        self.prompt_boxes = {name: QCheckBox(name, checked=True) for name in BUILTIN_PROMPTS}  # type: ignore[call-overload]
        self.dynamic = QCheckBox("dynamic", checked=True)  # type: ignore[call-overload]
        self.dynamic.setToolTip(
            "After the fixed Ks, a cell of auto K: each round drafts until the drafter is unsure "
            "(at most the engine's default max). Recommended only when it beats plain decoding and "
            "the fastest fixed K beyond the noise."
        )
        self.allow_battery = QCheckBox("run on battery")
        self.run_button = QPushButton("Run sweep", objectName="primary", clicked=self.start)  # type: ignore[call-overload]
        self.cancel_button = QPushButton("Cancel", clicked=self.cancel_sweep, enabled=False)  # type: ignore[call-overload]
        self.progress = QProgressBar(textVisible=True)
        self.progress_label = QLabel("", wordWrap=True)
        self.progress_label.setStyleSheet(f"color: {theme.MUTED}")
        self.table = SweepTable()
        self.chart = SpeedupChart()
        self.best_label = QLabel("", wordWrap=True)
        self.use_best = QPushButton("Use best K", clicked=self.use_best_k, enabled=False)  # type: ignore[call-overload]
        self.use_best.setToolTip(
            "Save the best choice per prompt type for this pair as the chat's default: a K "
            "only when it beats plain decoding beyond the noise, auto K only when it also beats "
            "the fastest K beyond the noise, else Off (speculation off)"
        )
        self.exports = [
            QPushButton(f"Export {kind}", enabled=False, clicked=lambda _=False, k=kind: self._ask_export(k))  # type: ignore[call-overload]
            for kind in ("CSV", "JSON", "PNG")
        ]
        self.ab = ABPanel()

    def _controls(self) -> QFrame:
        card = QFrame(objectName="sweepControls")  # type: ignore[call-arg]
        follow(card, lambda: card.setStyleSheet(f"QFrame#sweepControls {{ {card_css()} }}"))
        row = FlowLayout()
        row.add(_labelled("Sweep", self.mode))
        row.add(_labelled("K", self.ks_edit))
        boxes = (*self.prompt_boxes.values(), self.dynamic, self.allow_battery)
        for widget in (self.reps, self.warmup, self.max_tokens, *boxes):
            row.add(widget)
        buttons = QWidget()
        pair = QHBoxLayout(buttons)
        pair.setContentsMargins(0, 0, 0, 0)
        pair.addWidget(self.cancel_button)
        pair.addWidget(self.run_button)
        row.add(buttons)
        column = QVBoxLayout(card)
        column.setContentsMargins(12, 8, 12, 8)
        column.addLayout(row)
        column.addWidget(self.progress)
        column.addWidget(self.progress_label)
        return card

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        """As narrow as the widest control (the rows wrap); any height (the content scrolls)."""
        content = self.scroller.widget()
        assert content is not None
        bar = self.scroller.verticalScrollBar().sizeHint().width()
        return QSize(max(content.minimumSizeHint().width() + bar, self.suite.minimumSizeHint().width()), MIN_HEIGHT)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        wide = event.size().width() >= SIDE_BY_SIDE
        self.results.setOrientation(Qt.Orientation.Horizontal if wide else Qt.Orientation.Vertical)

    # --- the pair ---

    def set_client(self, client) -> None:
        """The engine client whose queue runs sweeps and A/B comparisons."""
        if client is self.client:
            return
        self.client = client
        client.queueChanged.connect(self._queue_changed)
        self.ab.set_client(client)
        self.suite.set_client(client)
        self._refresh_button()

    def set_pair(self, pair) -> None:
        """The loaded pair (a LoadedPair; None: nothing loaded); offers the modes it can sweep."""
        self.pair = pair
        self.mode.clear()
        reasons = pair.available_modes if pair is not None else {}
        for mode, label in (("draft", "Draft model"), ("mtp", "MTP head")):
            if pair is not None and not reasons.get(mode):
                self.mode.addItem(label, mode)
        self._choose_mode()
        self._refresh_button()
        if self.job is None:
            self.progress_label.setText(
                "" if self.mode.count() else "Load a target with a draft model or an MTP head to sweep K."
            )
        self.ab.set_pair(pair)
        self.suite.set_pair(pair)

    def _refresh_button(self) -> None:
        self.run_button.setEnabled(self.mode.count() > 0 and self.client is not None and self.job is None)

    def config(self) -> SweepConfig:
        """The sweep settings from the controls; ConfigError names what is wrong."""
        names = [name for name, box in self.prompt_boxes.items() if box.isChecked()]
        if not names:
            raise ConfigError("choose at least one prompt type to sweep")
        return SweepConfig(
            mode=self.mode.currentData() or "draft",
            ks=parse_ks(self.ks_edit.text()),
            reps=self.reps.value(),
            warmup=self.warmup.value(),
            max_tokens=self.max_tokens.value(),
            prompts=tuple(builtin_prompts(names)),
            allow_battery=self.allow_battery.isChecked(),
            dynamic=self.dynamic.isChecked(),
        )

    # --- running ---

    def start(self) -> bool:
        """Queue a sweep on the engine thread; False (and a banner) when the settings are wrong."""
        if self.pair is None or self.client is None or self.job is not None:
            return False
        try:
            config = self.config()
        except ConfigError as exc:
            self.banner.show_message(str(exc), "error")
            return False
        self.banner.dismiss()
        read_power, machine_info = self.read_power, self.machine_info

        def work(ctx):
            runner = SweepRunner(
                ctx.engine, config, read_power=read_power, machine_info=machine_info, cancel=ctx.cancel
            )
            return runner.run(ctx.emit)

        self.result, self.cells, self.ks = None, {}, config.ks
        self._show_cells()
        self.progress.setRange(0, config.total_runs)
        self.progress.setValue(0)
        self.job = self.client.submit("sweep", work)
        self.job.event.connect(self._job_handlers())
        self._set_running(True)
        self._queue_changed(self.client.host.state())  # its place now; JobQueued arrives a moment later
        return True

    def cancel(self) -> None:
        """Stop this window's sweep and suite (at close): each after its run in progress."""
        self.cancel_sweep()
        self.suite.cancel()

    def cancel_sweep(self) -> None:
        """Stop after the run in progress (the partial result is shown); a queued sweep never runs."""
        if self.job is None:
            return
        self.job.cancel()
        self.progress_label.setText("Cancelling after the current run…")

    def wait(self, ms: int = 120_000) -> bool:
        """Wait until the sweep's job ended on the engine thread (tests, shutdown)."""
        return self.job.wait(ms) if self.job is not None else True

    def _set_running(self, running: bool) -> None:
        self._refresh_button()
        self.cancel_button.setEnabled(running)
        self.busyChanged.emit(running)

    def _queue_changed(self, state) -> None:
        ahead = state.ahead_of(self.job.id) if self.job is not None else None
        if ahead is not None:
            self.progress_label.setText(f"Queued ({ahead} ahead)…")

    def _job_handlers(self) -> JobHandlers:
        return JobHandlers(
            queued=lambda ahead: self.progress_label.setText(f"Queued ({ahead} ahead)…" if ahead else "Starting…"),
            started=lambda: self.progress_label.setText("Checking the pair and the power source…"),
            progress=self._sweep_event,
            finished=lambda result: self.show_result(cast(SweepResult, result)),  # what the sweep job returns
            failed=self._job_failed,
            cancelled=lambda: self.progress_label.setText("Cancelled before it started."),
            ended=self._job_ended,
        )

    def _job_failed(self, failed: JobFailed) -> None:
        self.banner.show_message(failed.message, "error")
        self.progress_label.setText("")

    def _job_ended(self) -> None:
        self.job = None
        self._set_running(False)

    def _sweep_event(self, event) -> None:
        if isinstance(event, SweepStarted):
            self.progress_label.setText(f"{event.total_runs} runs ahead, {power_words(event.power_source)}")
        elif isinstance(event, RunDone):
            self.progress.setValue(event.done)
            cell = cell_name(event.k)
            kind = "warmup" if event.warmup else "rep"
            flag = " · output differs" if event.identical is False else ""
            self.progress_label.setText(f"{event.prompt} {cell} {kind}: {event.tokens_per_s:.1f} tok/s{flag}")
        elif isinstance(event, CellDone):
            self.cells.setdefault(event.prompt, []).append(event.cell)
            self._show_cells()
        elif isinstance(event, SweepFinished):
            pass  # the result arrives through succeeded

    # --- results ---

    def show_result(self, result: SweepResult) -> None:
        """Show a finished (or cancelled) sweep's table and chart."""
        self.result = result
        self.cells = {p.name: list(p.cells) for p in result.prompts}
        self.ks = tuple(result.settings.get("ks", self.ks))
        self._show_cells()
        best = result.best_k()
        text = ", ".join(f"{name} {choice_text(k)}" for name, k in best.items()) or "none (no usable K cell)"
        self.best_label.setText(("Cancelled: partial result. " if result.cancelled else "") + f"Best K: {text}")
        self.progress_label.setText("Cancelled." if result.cancelled else "Done.")
        self.use_best.setEnabled(bool(best))
        for button in self.exports:
            button.setEnabled(True)
        self.sweepFinished.emit(result)

    def _show_cells(self) -> None:
        prompts = list(self.cells.items())
        best = self.result.best_k() if self.result is not None else {}
        self.table.show_cells(prompts, best)
        self.chart.show_cells(prompts, self.ks)

    def use_best_k(self) -> Path | None:
        """Save the sweep's best K per prompt type for this pair (the chat's default K)."""
        if self.result is None:
            return None
        path = save_sweep(self.paths, self.result)
        best = self.result.best_k()
        if path is not None:
            self.best_label.setText(
                "Saved best K for this pair: " + ", ".join(f"{name} {choice_text(k)}" for name, k in best.items())
            )
            self.bestKSaved.emit(best)
        return path

    def export_csv(self, path: str | Path) -> Path:
        """Write every cell as CSV."""
        return write_csv(self._require_result(), path)

    def export_json(self, path: str | Path) -> Path:
        """Write the whole sweep, raw runs included, as JSON."""
        return write_json(self._require_result(), path)

    def export_png(self, path: str | Path) -> Path:
        """Save the speedup chart as a PNG image."""
        self._require_result()
        path = Path(path)
        if not self.chart.grab().save(str(path)):
            raise OSError(f"could not write the chart image to {path}")
        return path

    def _require_result(self) -> SweepResult:
        if self.result is None:
            raise ValueError("no sweep to export yet: run one first")
        return self.result

    def _ask_export(self, kind: str) -> None:
        suffix = kind.lower()
        name, _ = QFileDialog.getSaveFileName(
            self, f"Export sweep as {kind}", export_name(self.result, suffix), f"{kind} (*.{suffix})"
        )
        if not name:
            return
        try:
            getattr(self, f"export_{suffix}")(name)
        except (OSError, ValueError) as exc:
            self.banner.show_message(f"Export failed: {exc}", "error")
