"""Work off the UI thread: downloads on a one-thread worker pool of their own, short hub jobs on a TaskRunner.

Downloads never share the engine's thread: a multi-GB fetch must not delay a reply. Each
job has its own threading.Event; the UI thread sets it and the worker stops at the next chunk,
keeping the partial files for a resume.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

from PySide6.QtCore import QObject, Signal

from specchat.hub.config import HubConfig
from specchat.hub.download import FreeSpace, download_bundle
from specchat.hub.errors import DownloadCancelled, HubError

from ..tasks import TaskRunner
from ..worker_pool import WorkerPool

_job_ids = itertools.count(1)


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
    """Runs one job at a time on the download pool's thread; its signals reach the UI thread queued."""

    started = Signal(object)  # DownloadJob
    progress = Signal(object, object)  # DownloadJob, DownloadProgress
    finished = Signal(object, object)  # DownloadJob, list of snapshot Paths
    cancelled = Signal(object)  # DownloadJob
    failed = Signal(object, str)  # DownloadJob, message

    def __init__(self, config: HubConfig, free: FreeSpace | None = None):
        super().__init__()
        self.config, self.free = config, free

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
    """Owns the download pool (one thread) and its worker; submit() queues a job, cancel() stops one."""

    def __init__(self, config: HubConfig, free: FreeSpace | None = None, parent=None):
        super().__init__(parent)
        self.jobs: dict[int, DownloadJob] = {}
        self.pool = WorkerPool("specchat-downloads", max_workers=1)  # in order, never on the engine's thread
        self.worker = DownloadWorker(config, free)
        for signal in (self.worker.finished, self.worker.cancelled, self.worker.failed):
            signal.connect(self._forget)
        # Deleted without shutdown() (its window destroyed unclosed): the downloads still stop.
        self.destroyed.connect(partial(stop_downloads, self.pool, self.jobs))

    def submit(self, repo_ids: Sequence[str], keys: Sequence[str]) -> DownloadJob:
        """Queue a bundle download; returns its job (job.cancel stops it)."""
        job = DownloadJob(tuple(repo_ids), tuple(keys))
        self.jobs[job.job_id] = job
        self.pool.submit(self.worker.run, job)
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
        """Cancel every job and stop the pool (partial files stay for a resume)."""
        stop_downloads(self.pool, self.jobs, wait_ms)


def stop_downloads(pool: WorkerPool, jobs: dict[int, DownloadJob], wait_ms: int = 10_000) -> None:
    """Cancel every job, drop the queued ones and wait for the running one to stop at its next chunk."""
    for job in list(jobs.values()):
        job.cancel.set()
    pool.shutdown(wait_ms / 1000)


def hub_task_runner(parent: QObject | None = None) -> TaskRunner:
    """A TaskRunner for short hub jobs (search, scan, pair report, delete) that words failures as the hub does."""
    return TaskRunner(parent, describe=error_text)
