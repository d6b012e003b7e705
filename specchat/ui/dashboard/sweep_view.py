"""The sweep view: queue a K sweep for the loaded pair on the engine thread, see the table and chart, keep the best K."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from specchat.paths import AppPaths
from specchat.tuning.best_k import save_sweep
from specchat.tuning.sweep_report import choice_text, write_json
from specchat.tuning.sweep_results import CellResult, SweepResult

from .. import theme
from ..flow_layout import FlowLayout
from ..job_client import QtJob
from ..theme_switch import follow
from .suite_view import SuiteView
from .sweep_controls import SweepControls, card_css
from .sweep_export import export_name, write_csv
from .sweep_run import SweepRun

MIN_HEIGHT = 240  # below this the view scrolls
SIDE_BY_SIDE = 900  # from this width the table and the chart sit side by side, else one above the other


class SweepView(SweepRun, SweepControls, QWidget):
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

    def _set_running(self, running: bool) -> None:
        self._refresh_button()
        self.cancel_button.setEnabled(running)
        self.busyChanged.emit(running)

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
