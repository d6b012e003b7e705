"""The one Qt adapter between the worker pool and the GUI thread: a task's result or error comes back as a
queued signal and is handed to the callbacks given with it, on the thread this object lives in."""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from typing import Any, TypeVar

from PySide6.QtCore import QObject, Qt, Signal, Slot

from .worker_pool import WorkerPool

T = TypeVar("T")  # what a task returns


def plain_error_text(exc: BaseException) -> str:
    """An exception as 'TypeName: message'."""
    return f"{type(exc).__name__}: {exc}"


class TaskRunner(QObject):
    """Runs short tasks on a WorkerPool (its own when none is given, shut down with shutdown())."""

    taskDone = Signal(int, object)
    taskFailed = Signal(int, object)  # the task's exception

    def __init__(
        self,
        parent: QObject | None = None,
        pool: WorkerPool | None = None,
        describe: Callable[[BaseException], str] = plain_error_text,
    ):
        super().__init__(parent)
        self._owns_pool = pool is None
        self.pool = pool or WorkerPool()
        self.describe = describe
        # each on_done takes what its own fn returned: Any, as the results travel through one signal
        self._callbacks: dict[int, tuple[Callable[[Any], None], Callable[[str], None]]] = {}
        self._ids = itertools.count(1)
        self._tasks: dict[int, Callable[[], Any]] = {}  # each running task's function, released on this thread
        self.taskDone.connect(self._deliver_result, Qt.ConnectionType.QueuedConnection)
        self.taskFailed.connect(self._deliver_error, Qt.ConnectionType.QueuedConnection)

    def run(self, fn: Callable[[], T], on_done: Callable[[T], None], on_failed: Callable[[str], None]) -> None:
        """Start fn() on the pool; on_done(result) or on_failed(message) is called on this object's thread.
        After shutdown (a timer that fires while the window closes) the task is dropped: nobody waits for it."""
        if self.pool.closed:
            return
        task_id = next(self._ids)
        self._callbacks[task_id] = (on_done, on_failed)
        # The pool's thread holds neither fn (it may close over widgets) nor this QObject for good: a Qt object
        # whose last Python reference goes on a worker thread is destroyed there, which Qt does not survive.
        tasks, runner = self._tasks, weakref.ref(self)
        tasks[task_id] = fn
        future = self.pool.submit(_call, tasks, task_id)
        future.add_done_callback(lambda done: _report_to(runner, task_id, done))

    def _report(self, task_id: int, future: Future) -> None:
        """On the pool thread (or here, for a task cancelled at shutdown): send the outcome home."""
        try:
            error = future.exception()
        except CancelledError:  # dropped at shutdown before it started: nobody is waiting
            return
        try:
            if error is None:
                self.taskDone.emit(task_id, future.result())
            else:
                self.taskFailed.emit(task_id, error)
        except RuntimeError:  # the window closed and this runner is gone: nobody is waiting
            pass

    @Slot(int, object)
    def _deliver_result(self, task_id: int, result: object) -> None:
        self._tasks.pop(task_id, None)  # the task's function goes here, on this object's thread
        callbacks = self._callbacks.pop(task_id, None)
        if callbacks is not None:
            callbacks[0](result)

    @Slot(int, object)
    def _deliver_error(self, task_id: int, error: BaseException) -> None:
        self._tasks.pop(task_id, None)
        callbacks = self._callbacks.pop(task_id, None)
        if callbacks is not None:
            callbacks[1](self.describe(error))

    @property
    def busy(self) -> bool:
        """True while a task has not reported back."""
        return bool(self._callbacks)

    def shutdown(self, wait_ms: int = 10_000) -> None:
        """Drop pending callbacks; when the pool is this runner's own, stop it and wait for running tasks."""
        self._callbacks.clear()
        if self._owns_pool:
            self.pool.shutdown(wait_ms / 1000)
        self._tasks.clear()


def _call(tasks: dict[int, Callable[[], Any]], task_id: int) -> Any:
    """On the pool thread: run the task's function, held by the runner's table (never the last reference)."""
    return tasks[task_id]()


def _report_to(runner: weakref.ref[TaskRunner], task_id: int, future: Future) -> None:
    """On the pool thread: hand the outcome to the runner if it still exists."""
    alive = runner()
    if alive is not None:
        alive._report(task_id, future)
