"""Downloads as the table shows them: each job's state and progress on the rows of its repos."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QObject, Signal

from .rows import CANCELLED, DONE, DOWNLOADING, FAILED, QUEUED, ModelRow, Transfer, repo_ids
from .table_model import ModelTableModel
from .workers import Downloader, DownloadJob


class DownloadRows(QObject):
    """Queues downloads on the Downloader and mirrors the worker's signals onto the table rows."""

    ended = Signal(object, str)  # DownloadJob, DONE / CANCELLED / FAILED: the files on disk changed
    failed = Signal(str)  # a message for the user

    def __init__(self, downloader: Downloader, table: ModelTableModel, parent=None):
        super().__init__(parent)
        self.downloader, self.table = downloader, table
        worker = downloader.worker
        worker.started.connect(self._started)
        worker.progress.connect(self._progress)
        worker.finished.connect(self._finished)
        worker.cancelled.connect(self._cancelled)
        worker.failed.connect(self._failed)

    def start(self, rows: Sequence[ModelRow]) -> DownloadJob | None:
        """Download the rows' repos as one job (a target and its draft together)."""
        rows = [r for r in rows if r.downloadable]
        if not rows:
            return None
        job = self.downloader.submit(repo_ids(rows), [r.key for r in rows])
        self.table.set_transfer(job.keys, Transfer(QUEUED))
        return job

    def cancel(self, rows: Sequence[ModelRow]) -> None:
        """Stop the jobs of these rows at their next chunk (partial files stay for a resume)."""
        for row in rows:
            self.downloader.cancel(row.key)

    def clear_done(self) -> None:
        """Drop the "done" state once a rescan shows the finished models on disk."""
        for row in self.table.rows():
            if row.transfer is not None and row.transfer.state == DONE:
                self.table.set_transfer([row.key], None)

    def _started(self, job: DownloadJob) -> None:
        self.table.set_transfer(job.keys, Transfer(DOWNLOADING))

    def _progress(self, job: DownloadJob, progress) -> None:
        self.table.set_transfer(job.keys, Transfer(DOWNLOADING, progress))

    def _end(self, job: DownloadJob, state: str, message: str = "") -> None:
        row = self.table.find(job.keys[0])
        last = row.transfer.progress if row is not None and row.transfer is not None else None
        self.table.set_transfer(job.keys, Transfer(state, last, message))
        self.ended.emit(job, state)

    def _finished(self, job: DownloadJob, paths) -> None:
        self._end(job, DONE)

    def _cancelled(self, job: DownloadJob) -> None:
        self._end(job, CANCELLED)

    def _failed(self, job: DownloadJob, message: str) -> None:
        self._end(job, FAILED, message)
        self.failed.emit(f"Download failed: {message}")
