"""The Suite tab of the sweep window: run the suite (tuning/suite.py) for the loaded pair as one engine job, see a
category x drafter table of speed against plain decoding and acceptance, a bar chart of the speed, and the
drafter each category should use. Each pair's last report is kept (JSON and Markdown) and shown again."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from PySide6.QtCore import QSignalBlocker, QSize, Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from specchat.engine.config import LIMITS
from specchat.engine.owner import JobFailed
from specchat.paths import AppPaths
from specchat.tuning.best_k import best_k
from specchat.tuning.suite import SuiteConfig, SuiteProgress, SuiteRun, run_suite, select
from specchat.tuning.suite_report import to_json, write_reports

from .. import theme
from ..banner import Banner
from ..flow_layout import FlowLayout
from ..job_client import QtJob
from ..job_events import JobHandlers
from ..theme_switch import follow
from .suite_categories import CategoryPicker, category_names, suite_items
from .suite_summary import load_report, recommendation, report_files, saved_words
from .suite_table import NO_REPORT, SuiteChart, SuiteTable

NO_PAIR = "Load a pair to run the suite."
NO_CATEGORY = "Choose at least one category to run (Categories)."
MIN_HEIGHT = 240  # below this the view scrolls


class SuiteView(QWidget):
    """Give it the engine client and the loaded pair; Run suite queues the suite, its report is kept per pair."""

    suiteFinished = Signal(object)  # the report (suite_report.to_json) of a run that ended
    busyChanged = Signal(bool)
    controlsChanged = Signal(dict)  # the controls' values (controls()), to remember them across restarts

    def __init__(self, paths: AppPaths | None = None, parent=None, *, client=None):
        super().__init__(parent)
        self.paths = paths or AppPaths.default()
        self.client = None
        self.pair = None
        self.job: QtJob | None = None
        self.report: dict[str, Any] | None = None
        self._build()
        self.set_pair(None)
        if client is not None:
            self.set_client(client)
        self._watch_controls()

    def _build(self) -> None:
        self.setObjectName("suiteView")
        self.banner = Banner()
        self.per_category = QSpinBox(minimum=1, maximum=50, value=2, prefix="prompts per category ")
        self.max_tokens = QSpinBox(
            minimum=int(LIMITS["max_tokens"].low), maximum=int(LIMITS["max_tokens"].high), value=128, suffix=" tokens"
        )
        self.fixed_k = QSpinBox(minimum=0, maximum=int(LIMITS["num_draft_tokens"].high), value=0, prefix="fixed K ")
        self.fixed_k.setSpecialValueText("fixed K: the pair's best")
        self.picker = CategoryPicker(category_names(self.paths.cache_dir))
        self.picker.changed.connect(self._refresh_button)
        self.run_button = QPushButton("Run suite", objectName="primary", clicked=self.start)  # type: ignore[call-overload]
        self.cancel_button = QPushButton("Cancel", clicked=self.cancel, enabled=False)  # type: ignore[call-overload]
        self.progress = QProgressBar(textVisible=True)
        self.progress.hide()  # shown from the first run on: idle, it would read as an empty text field
        self.progress_label = QLabel("", wordWrap=True)
        self.table = SuiteTable()
        self.chart = SuiteChart()
        self.advice = QLabel("", wordWrap=True, objectName="suiteAdvice")  # type: ignore[call-overload]
        self.advice.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.saved_label = QLabel("", wordWrap=True)
        content = QWidget(objectName="suiteContent")  # type: ignore[call-arg]
        follow(self, self._restyle)
        layout = QVBoxLayout(content)
        layout.setContentsMargins(14, 12, 14, 12)
        layout.setSpacing(10)
        layout.addWidget(self.banner)
        controls = QFrame(objectName="suiteControls")  # type: ignore[call-arg]
        row = FlowLayout()
        for widget in (self.picker, self.per_category, self.max_tokens, self.fixed_k, self._buttons()):
            row.add(widget)
        column = QVBoxLayout(controls)
        column.setContentsMargins(12, 8, 12, 8)
        column.addLayout(row)
        column.addWidget(self.progress)
        column.addWidget(self.progress_label)
        layout.addWidget(controls)
        layout.addWidget(self.advice)
        layout.addWidget(self.table)
        layout.addWidget(self.chart, 1)
        layout.addWidget(self.saved_label)
        self.scroller = QScrollArea(widgetResizable=True, frameShape=QFrame.Shape.NoFrame)  # type: ignore[call-arg]
        self.scroller.setWidget(content)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.scroller)

    def _buttons(self) -> QWidget:
        """Cancel and Run as one piece: a wrapped row never parts them."""
        buttons = QWidget()
        pair = QHBoxLayout(buttons)
        pair.setContentsMargins(0, 0, 0, 0)
        pair.addWidget(self.cancel_button)
        pair.addWidget(self.run_button)
        return buttons

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        """As narrow as the widest control (the rows wrap, the table scrolls); any height (the content scrolls)."""
        content = self.scroller.widget()
        assert content is not None
        bar = self.scroller.verticalScrollBar().sizeHint().width()
        return QSize(content.minimumSizeHint().width() + bar, MIN_HEIGHT)

    def _restyle(self) -> None:
        card = f"background: {theme.SURFACE}; border: 1px solid {theme.BORDER}; border-radius: 10px;"
        self.setStyleSheet(
            f"#suiteView, #suiteContent {{ background: {theme.WINDOW_BG}; }} QFrame#suiteControls {{ {card} }}"
        )
        self.progress_label.setStyleSheet(f"color: {theme.MUTED}")
        self.saved_label.setStyleSheet(f"color: {theme.MUTED}")

    # --- the controls ---

    @property
    def categories(self) -> list[str] | None:
        """The categories a run covers, in the suite's order; None: all of them (what --categories leaves out)."""
        return None if self.picker.all_chosen() else self.picker.chosen()

    @categories.setter
    def categories(self, names: list[str] | None) -> None:
        self.picker.set_chosen(names)

    def _watch_controls(self) -> None:
        changed = lambda *_: self.controlsChanged.emit(self.controls())  # noqa: E731
        for box in (self.per_category, self.max_tokens, self.fixed_k):
            box.valueChanged.connect(changed)
        self.picker.changed.connect(changed)

    def controls(self) -> dict:
        """The controls' values as plain JSON: what set_controls takes back (categories None: all)."""
        return {
            "categories": self.categories,
            "per_category": self.per_category.value(),
            "max_tokens": self.max_tokens.value(),
            "fixed_k": self.fixed_k.value(),
        }

    def set_controls(self, values: dict) -> None:
        """Put saved values back; a value of the wrong type or range, or naming no category there is, is left."""
        blockers = [QSignalBlocker(w) for w in (self.picker, self.per_category, self.max_tokens, self.fixed_k)]
        for name, box in (("per_category", self.per_category), ("max_tokens", self.max_tokens)):
            _restore(box, values.get(name))
        _restore(self.fixed_k, values.get("fixed_k"))
        if "categories" in values:
            self.picker.restore(values["categories"])
        del blockers
        self._refresh_button()

    # --- the pair ---

    def set_client(self, client) -> None:
        """The engine client whose queue runs the suite."""
        self.client = client
        self._refresh_button()

    def set_pair(self, pair) -> None:
        """The loaded pair (None: nothing loaded); shows its last saved report."""
        self.pair = pair
        self.picker.set_names(category_names(self.paths.cache_dir))  # a `specchat suite` run may have fetched more
        self._refresh_button()
        if self.job is not None:
            return
        self.progress_label.setText("" if pair is not None else NO_PAIR)
        files = report_files(self.paths, pair.target, pair.draft) if pair is not None and not pair.remote else None
        report = load_report(files[0]) if files else None
        self.show_report(report, files[0] if report is not None and files else None)

    def _refresh_button(self) -> None:
        local = self.pair is not None and not self.pair.remote  # a server's engine runs no suite here
        chosen = bool(self.picker.chosen())
        self.run_button.setEnabled(local and chosen and self.client is not None and self.job is None)
        self.run_button.setToolTip("" if chosen else NO_CATEGORY)

    # --- running ---

    def config(self) -> SuiteConfig:
        """The suite settings from the controls (the pair's saved best K per prompt kind, unless a fixed K)."""
        assert self.pair is not None
        target, draft = self.pair.target, self.pair.draft
        best = {"draft": (best_k(self.paths, target, draft) or {}) if draft else {}}
        best["mtp"] = best_k(self.paths, target, "mtp") or {}
        return SuiteConfig(max_tokens=self.max_tokens.value(), k=self.fixed_k.value() or None, best=best)

    def start(self) -> bool:
        """Queue the suite on the engine thread; False when there is no pair, no client or one runs already."""
        if self.pair is None or self.pair.remote or self.client is None or self.job is not None:
            return False
        if not self.picker.chosen():
            self.banner.show_message(NO_CATEGORY, "warning")
            return False
        self.banner.dismiss()
        config, pair, per_category = self.config(), self.pair, self.per_category.value()
        categories, cache_dir = self.categories, self.paths.cache_dir

        def work(ctx):
            chosen = select(suite_items(cache_dir), categories, per_category)
            return (
                yield from run_suite(
                    ctx.engine, chosen, config, target=pair.target, drafter=pair.draft, cancel=ctx.cancel
                )
            )

        self.progress.setRange(0, 0)  # busy until the first generation says how many there are
        self.progress.show()
        self.job = self.client.submit("suite", work)
        self.job.event.connect(self._handlers(pair))
        self._set_running(True)
        return True

    def cancel(self) -> None:
        """Stop after the generation in progress (the partial tables are shown, not kept)."""
        if self.job is not None:
            self.job.cancel()
            self.progress_label.setText("Cancelling after the current generation…")

    def wait(self, ms: int = 120_000) -> bool:
        """Wait until the suite's job ended on the engine thread (tests, shutdown)."""
        return self.job.wait(ms) if self.job is not None else True

    def _handlers(self, pair) -> JobHandlers:
        return JobHandlers(
            queued=lambda ahead: self.progress_label.setText(f"Queued ({ahead} ahead)…" if ahead else "Starting…"),
            started=lambda: self.progress_label.setText("Reading the prompts…"),
            progress=self._progress,
            finished=lambda run: self._finished(pair, cast(SuiteRun, run)),
            failed=self._failed,
            cancelled=lambda: self.progress_label.setText("Cancelled before it started."),
            ended=self._ended,
        )

    def _progress(self, event) -> None:
        if isinstance(event, SuiteProgress):
            self.progress.setRange(0, event.total)
            self.progress.setValue(event.done)
            self.progress_label.setText(f"{event.done} / {event.total}: {event.what}")

    def _failed(self, failed: JobFailed) -> None:
        self.banner.show_message(failed.message, "error")
        self.progress_label.setText("")

    def _ended(self) -> None:
        self.job = None
        if self.progress.maximum() == 0:  # ended before its first generation: no longer busy
            self.progress.setRange(0, 1)
        self._set_running(False)

    def _set_running(self, running: bool) -> None:
        self._refresh_button()
        self.cancel_button.setEnabled(running)
        self.busyChanged.emit(running)

    def _finished(self, pair, run: SuiteRun) -> None:
        """Show the run; keep its report for the pair unless it was cancelled (a partial run is not kept)."""
        report = to_json(run)
        saved = None
        if not run.cancelled:
            json_file, markdown_file = report_files(self.paths, pair.target, pair.draft)
            try:
                write_reports(run, json_file, markdown_file)
                saved = json_file
            except OSError as exc:
                self.banner.show_message(f"Could not keep the suite report: {exc}", "warning")
        self.progress_label.setText("Cancelled: partial tables, not kept." if run.cancelled else "Done.")
        self.show_report(report, saved)
        self.suiteFinished.emit(report)

    # --- results ---

    def show_report(self, report: dict[str, Any] | None, file: Path | None = None) -> None:
        """Show a report's table, chart and recommendation (None: nothing run for this pair yet)."""
        self.report = report
        self.table.show_report(report)
        self.chart.show_report(report)
        self.advice.setText(recommendation(report) if report else (NO_REPORT if self.pair is not None else ""))
        errors = len(report.get("errors", [])) if report else 0
        exact = f" · {errors} outputs differed from plain decoding (marked ≠)" if errors else ""
        self.saved_label.setText(saved_words(file) + exact if file is not None else exact.lstrip(" ·"))


def _restore(box: QSpinBox, value: object) -> None:
    """Put a saved whole number back into a spin box, unless it is of the wrong type or out of its range."""
    if isinstance(value, int) and not isinstance(value, bool) and box.minimum() <= value <= box.maximum():
        box.setValue(value)
