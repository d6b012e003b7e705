"""The Models window's MTP head line: "MTP head: not in this download. Get it: 0.9 GB from Qwen/Qwen3.6-27B".

For a selected local Qwen3.5+ model without a head, the original's head is planned on the task
pool (its index and a few headers are read), then fetched and converted on a thread of its own
with progress and cancel, like downloads; `finished` carries the AddedHead.
"""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QProgressBar, QPushButton

from specchat.hub.catalog import Catalog
from specchat.hub.config import HubConfig
from specchat.hub.download import FreeSpace
from specchat.hub.errors import DownloadCancelled
from specchat.hub.mtp_head import HeadPlan, add_head, plan_head
from specchat.hub.store import LocalModel
from specchat.hub.units import format_bytes

from ..tasks import TaskRunner
from ..worker_pool import WorkerPool
from .workers import error_text

HEAD_MODEL_TYPES = ("qwen3_5",)
NOT_HERE = "MTP head: not in this download."


def wants_head(model: LocalModel | None) -> bool:
    """A complete local Qwen3.5+ model whose folder has no usable MTP head."""
    facts = model.facts if model is not None else None
    return bool(
        model is not None
        and model.complete
        and model.mtp_available is False
        and facts is not None
        and facts.model_type.startswith(HEAD_MODEL_TYPES)
    )


class HeadWorker(QObject):
    """Fetches and converts one planned head on the head's pool thread; every outcome is a signal (queued to the
    UI thread)."""

    progress = Signal(object)  # DownloadProgress
    finished = Signal(object)  # AddedHead
    cancelled = Signal()
    failed = Signal(str)

    def __init__(self, config: HubConfig, free: FreeSpace | None):
        super().__init__()
        self.config, self.free = config, free

    def run(self, plan: HeadPlan, cancel: threading.Event) -> None:
        """Add the planned head (runs on the head's pool thread)."""
        try:
            added = add_head(plan, self.config, self.progress.emit, cancel, self.free)
        except DownloadCancelled:
            self.cancelled.emit()
        except Exception as exc:  # the window must hear about every failure
            self.failed.emit(error_text(exc))
        else:
            self.finished.emit(added)


class MtpHeadBar(QFrame):
    """The head line under the models table, with Get / Cancel and a progress bar."""

    finished = Signal(object)  # AddedHead, after the line shows it
    failed = Signal(str)
    planned = Signal(object)  # HeadPlan, or None when planning failed

    def __init__(self, runner: TaskRunner, config: HubConfig, catalog: Catalog, free: FreeSpace | None = None):
        super().__init__(objectName="mtpHeadBar")  # type: ignore[call-arg]
        self.runner, self.config, self.catalog = runner, config, catalog
        self.folder: Path | None = None
        self.plan: HeadPlan | None = None
        self.cancel_event: threading.Event | None = None
        self.cancel_events: list[threading.Event] = []  # every fetch's, for a window destroyed unclosed
        self._build()
        self.pool = WorkerPool("specchat-mtp-head", max_workers=1)  # a fetch of GBs: never on the shared pool
        self.worker = HeadWorker(config, free)
        self.worker.progress.connect(self._progress)
        self.worker.finished.connect(self._finished)
        self.worker.cancelled.connect(lambda: self._ended("MTP head: cancelled; Get it again to resume."))
        self.worker.failed.connect(self._failed)
        # Deleted without shutdown() (its window destroyed unclosed): the fetch still stops.
        self.destroyed.connect(partial(stop_fetch, self.pool, self.cancel_events))
        self.hide()

    def _build(self) -> None:
        self.label = QLabel(objectName="hint", wordWrap=True)  # type: ignore[call-overload]
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.get_button = QPushButton("Get MTP head", objectName="primary", enabled=False)  # type: ignore[call-overload]
        self.cancel_button = QPushButton("Cancel", enabled=False)  # type: ignore[call-overload]
        self.bar = QProgressBar(maximum=1000, textVisible=True)
        self.bar.hide()
        self.get_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label, 1)
        row.addWidget(self.bar)
        row.addWidget(self.get_button)
        row.addWidget(self.cancel_button)

    @property
    def busy(self) -> bool:
        """True while a head is being fetched."""
        return self.cancel_event is not None

    def set_model(self, model: LocalModel | None) -> None:
        """Show the line for this model (planning its head off the UI thread), or hide it."""
        if self.busy or (model is not None and model.path == self.folder):
            return
        self.folder, self.plan = (model.path if model is not None else None), None
        self.get_button.setEnabled(False)
        if not wants_head(model):
            self.hide()
            return
        assert model is not None
        self.label.setText(f"{NOT_HERE} Looking for it in the original checkpoint…")
        self.show()
        folder, config, catalog = model.path, self.config, self.catalog
        self.runner.run(lambda: plan_head(folder, config, None, catalog), self._planned, self._plan_failed)

    def _planned(self, plan: HeadPlan) -> None:
        if plan.folder != Path(self.folder or "").resolve():
            return  # another model was selected meanwhile
        self.plan = plan
        self.label.setText(f"{NOT_HERE} Get it: {plan.summary}")
        self.get_button.setEnabled(True)
        self.planned.emit(plan)

    def _plan_failed(self, message: str) -> None:
        self.label.setText(f"{NOT_HERE} It cannot be added: {message}")
        self.planned.emit(None)

    def start(self) -> None:
        """Fetch and convert the planned head on the head's pool thread."""
        if self.plan is None or self.busy:
            return
        self.cancel_event = threading.Event()
        self.get_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.bar.setValue(0)
        self.bar.show()
        self.label.setText(f"MTP head: fetching {self.plan.summary}…")
        self.cancel_events.append(self.cancel_event)
        self.pool.submit(self.worker.run, self.plan, self.cancel_event)

    def cancel(self) -> None:
        """Stop at the next chunk; the bytes fetched so far stay for a resume."""
        if self.cancel_event is not None:
            self.cancel_event.set()

    def _progress(self, p) -> None:
        self.bar.setValue(int(1000 * p.fraction))
        self.bar.setFormat(f"{format_bytes(p.bytes_done)} / {format_bytes(p.bytes_total)}")

    def _ended(self, text: str) -> None:
        self.cancel_event = None
        self.cancel_button.setEnabled(False)
        self.get_button.setEnabled(self.plan is not None)
        self.bar.hide()
        self.label.setText(text)

    def _finished(self, added) -> None:
        self._ended(f"MTP head: added ({added.sidecar.name}). Speculation can now use MTP.")
        self.get_button.setEnabled(False)
        self.plan = None
        self.finished.emit(added)

    def _failed(self, message: str) -> None:
        self._ended(f"MTP head: failed: {message}")
        self.failed.emit(message)

    def shutdown(self, wait_ms: int = 10_000) -> None:
        """Cancel a fetch in progress (its bytes stay) and stop the pool."""
        stop_fetch(self.pool, self.cancel_events, wait_ms)


def stop_fetch(pool: WorkerPool, cancels: list[threading.Event], wait_ms: int = 10_000) -> None:
    """Stop every fetch at its next chunk and wait for the pool's thread to end."""
    for cancel in cancels:
        cancel.set()
    pool.shutdown(wait_ms / 1000)
