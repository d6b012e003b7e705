"""Running a sweep from the sweep view: queued on the engine thread, its place in the queue and its progress
said run by run, cancelled after the run in progress. A mixin of SweepView."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from specchat.engine.errors import ConfigError
from specchat.engine.owner import JobFailed
from specchat.tuning.sweep import SweepRunner
from specchat.tuning.sweep_results import CellDone, RunDone, SweepFinished, SweepResult, SweepStarted, cell_name

from ..job_events import JobHandlers
from .tiles import power_words

if TYPE_CHECKING:
    from PySide6.QtWidgets import QLabel, QProgressBar

    from specchat.system.power import PowerStatus
    from specchat.tuning.sweep import MachineInfo, SweepConfig
    from specchat.tuning.sweep_results import CellResult

    from ..banner import Banner
    from ..engine_client import EngineClient, LoadedPair
    from ..job_client import QtJob
    from .suite_view import SuiteView


class SweepRun:
    """Start, follow and cancel the view's sweep; SweepView supplies the pair, the client and the widgets."""

    # what SweepView supplies (declared for the type checker; nothing is set here)
    pair: LoadedPair | None
    client: EngineClient | None
    job: QtJob | None
    read_power: Callable[[], PowerStatus] | None
    machine_info: Callable[[], MachineInfo] | None
    result: SweepResult | None
    cells: dict[str, list[CellResult]]
    ks: tuple[int, ...]
    banner: Banner
    suite: SuiteView
    progress: QProgressBar
    progress_label: QLabel
    config: Callable[[], SweepConfig]  # SweepControls'
    show_result: Callable[[SweepResult], None]
    _show_cells: Callable[[], None]
    _set_running: Callable[[bool], None]

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
