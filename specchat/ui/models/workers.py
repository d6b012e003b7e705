"""Work off the UI thread: downloads on a QThread of their own, short hub jobs on a thread pool.

Downloads never share the engine's thread: a multi-GB fetch must not delay a reply. Each
job has its own threading.Event; the UI thread sets it and the worker stops at the next chunk,
keeping the partial files for a resume.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from PySide6.QtCore import QObject, QRunnable, QThread, QThreadPool, Signal, Slot

from specchat.hub.config import HubConfig
from specchat.hub.download import FreeSpace, download_bundle
from specchat.hub.errors import DownloadCancelled, HubError

_job_ids = itertools.count(1)
T = TypeVar("T")  # what a TaskRunner task returns


def error_text(exc: BaseException) -> str:
    """A HubError's own message (written for users), else the exception's type and text."""
    return str(exc) if isinstance(exc, HubError) else f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class DownloadJob:
    """Repos fetched as one bundle (a target and its draft), with the rows they show on."""

    repo_ids: tuple[str, ...]
    keys: tuple[str, ...]
    job_id: int = field(default_factory=lambda: next(_job_ids))
    cancel: threading.Event = field(default_factory=threading.Event, compare=False)


class DownloadWorker(QObject):
    """Lives on the download thread; runs one job at a time, in the order they were queued."""

    started = Signal(object)  # DownloadJob
    progress = Signal(object, object)  # DownloadJob, DownloadProgress
    finished = Signal(object, object)  # DownloadJob, list of snapshot Paths
    cancelled = Signal(object)  # DownloadJob
    failed = Signal(object, str)  # DownloadJob, message

    def __init__(self, config: HubConfig, free: FreeSpace | None = None):
        super().__init__()
        self.config, self.free = config, free

    @Slot(object)
    def run(self, job: DownloadJob) -> None:
        """Download the job's repos; every outcome leaves as a signal."""
        if job.cancel.is_set():
            self.cancelled.emit(job)
            return
        self.started.emit(job)
        try:
            paths = download_bundle(
                list(job.repo_ids), self.config, lambda p: self.progress.emit(job, p), job.cancel, self.free
            )
        except DownloadCancelled:
            self.cancelled.emit(job)
        except Exception as exc:  # the window must hear about every failure
            self.failed.emit(job, error_text(exc))
        else:
            self.finished.emit(job, paths)


class Downloader(QObject):
    """Owns the download thread and its worker; submit() queues a job, cancel() stops one."""

    _submit = Signal(object)

    def __init__(self, config: HubConfig, free: FreeSpace | None = None, parent=None):
        super().__init__(parent)
        self.jobs: dict[int, DownloadJob] = {}
        self.download_thread = QThread(self)
        self.download_thread.setObjectName("specchat-downloads")
        self.worker = DownloadWorker(config, free)
        self.worker.moveToThread(self.download_thread)
        self._submit.connect(self.worker.run)
        for signal in (self.worker.finished, self.worker.cancelled, self.worker.failed):
            signal.connect(self._forget)
        # Deleted without shutdown() (its window destroyed unclosed): stop the thread before Qt
        # deletes it, since destroying a running QThread aborts the process.
        self.destroyed.connect(partial(stop_downloads, self.download_thread, self.jobs))
        self.download_thread.start()

    def submit(self, repo_ids: Sequence[str], keys: Sequence[str]) -> DownloadJob:
        """Queue a bundle download; returns its job (job.cancel stops it)."""
        job = DownloadJob(tuple(repo_ids), tuple(keys))
        self.jobs[job.job_id] = job
        self._submit.emit(job)
        return job

    def job_for(self, key: str) -> DownloadJob | None:
        """The queued or running job that shows on this row."""
        return next((j for j in self.jobs.values() if key in j.keys), None)

    def cancel(self, key: str) -> bool:
        """Ask the job of this row to stop; False when none is running."""
        job = self.job_for(key)
        if job is not None:
            job.cancel.set()
        return job is not None

    def _forget(self, job: DownloadJob, *_) -> None:
        self.jobs.pop(job.job_id, None)

    def shutdown(self, wait_ms: int = 10_000) -> None:
        """Cancel every job and stop the thread (partial files stay for a resume)."""
        stop_downloads(self.download_thread, self.jobs, wait_ms)


def stop_downloads(thread: QThread, jobs: dict[int, DownloadJob], wait_ms: int = 10_000) -> None:
    """Cancel every job, then end the thread's event loop and wait for it."""
    for job in list(jobs.values()):
        job.cancel.set()
    thread.quit()
    thread.wait(wait_ms)


class BackgroundTask(QRunnable):
    """fn() on a pool thread; its result or error goes back through the runner's signals."""

    def __init__(self, runner: TaskRunner, task_id: int, fn: Callable[[], object]):
        super().__init__()
        self.runner, self.task_id, self.fn = runner, task_id, fn

    def run(self) -> None:
        try:
            result = self.fn()
        except Exception as exc:  # reported, never lost in a pool thread
            self._report(self.runner.taskFailed, error_text(exc))
        else:
            self._report(self.runner.taskDone, result)

    def _report(self, signal, value) -> None:
        try:
            signal.emit(self.task_id, value)
        except RuntimeError:  # the window closed and its runner is gone: nobody is waiting
            pass


class TaskRunner(QObject):
    """Runs short hub jobs (search, scan, pair report, delete) on its own thread pool.

    Results arrive through this object's signals, queued to the UI thread it lives in,
    and are handed to the callbacks given to run().
    """

    taskDone = Signal(int, object)
    taskFailed = Signal(int, str)

    def __init__(self, parent=None, max_threads: int = 3):
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(max_threads)
        # each on_done takes what its own fn returned: Any, as the results travel through one signal
        self._callbacks: dict[int, tuple[Callable[[Any], None], Callable[[str], None]]] = {}
        self._ids = itertools.count(1)
        self.taskDone.connect(self._deliver_result)
        self.taskFailed.connect(self._deliver_error)

    def run(self, fn: Callable[[], T], on_done: Callable[[T], None], on_failed: Callable[[str], None]) -> None:
        """Start fn(); on_done(result) or on_failed(message) is called on the UI thread."""
        task_id = next(self._ids)
        self._callbacks[task_id] = (on_done, on_failed)
        self.pool.start(BackgroundTask(self, task_id, fn))

    @Slot(int, object)
    def _deliver_result(self, task_id: int, result: object) -> None:
        callbacks = self._callbacks.pop(task_id, None)
        if callbacks is not None:
            callbacks[0](result)

    @Slot(int, str)
    def _deliver_error(self, task_id: int, message: str) -> None:
        callbacks = self._callbacks.pop(task_id, None)
        if callbacks is not None:
            callbacks[1](message)

    @property
    def busy(self) -> bool:
        """True while a task has not reported back."""
        return bool(self._callbacks)

    def shutdown(self, wait_ms: int = 10_000) -> None:
        """Drop pending callbacks and wait for running tasks (each is bounded by the hub's deadline)."""
        self._callbacks.clear()
        self.pool.waitForDone(wait_ms)
