"""EngineHost: one thread, one queue, the current engine; every MLX job runs there, one at a time."""

from __future__ import annotations

import gc
import inspect
import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterator
from typing import TypeVar, overload

from ..errors import EngineError, error_kind, user_message
from . import batch_job
from .batch_job import JoinSpec
from .events import JobCancelled, JobEnd, JobEvent, JobFailed, JobFinished, JobInfo, JobQueued, JobStarted, QueueState
from .handle import JobCancelledError, JobContext, JobHandle, Listener, Work
from .hosted import HostedEngine

log = logging.getLogger(__name__)
R = TypeVar("R")


class EngineHost:
    """Owns one thread and the current engine; runs submitted jobs there one at a time, in order."""

    def __init__(self, name: str = "engine"):
        self._engine: HostedEngine | None = None  # an Engine, a RemoteEngine or a cluster's (see install)
        self._cond = threading.Condition(threading.RLock())
        self._queue: deque[JobHandle[object]] = deque()
        self._running: JobHandle[object] | None = None  # the job running alone
        self._rows: list[JobHandle[object]] = []  # the jobs running together in a batch (see batch_job)
        self._observers: list[Callable[[JobEvent], None]] = []
        self._ids = itertools.count(1)
        self._stopping = False
        self._parked = threading.Event()
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.thread.start()

    @property
    def engine(self) -> HostedEngine | None:
        """The engine jobs use (None before the first load). Only jobs may call it."""
        return self._engine

    def on_thread(self) -> bool:
        """True on the host's own thread."""
        return threading.current_thread() is self.thread

    def install(self, engine: HostedEngine) -> None:
        """Make `engine` the current one (from a job); the previous one is released."""
        if not self.on_thread():
            raise EngineError("install() runs inside a job on the engine thread")
        old, self._engine = self._engine, engine
        if old is not None and old is not engine:
            del old
            _release_memory()

    def add_observer(self, observer: Callable[[JobEvent], None]) -> None:
        """Call observer with every job's lifecycle events (queued, started, ended; not progress)."""
        self._observers.append(observer)

    def remove_observer(self, observer: Callable[[JobEvent], None]) -> None:
        """Stop calling an observer."""
        if observer in self._observers:
            self._observers.remove(observer)

    @overload
    def submit(
        self,
        kind: str,
        work: Callable[[JobContext], Generator[object, None, R]],
        listener: Listener | None = None,
        join: JoinSpec | None = None,
    ) -> JobHandle[R]: ...

    @overload
    def submit(
        self, kind: str, work: Callable[[JobContext], R], listener: Listener | None = None, join: JoinSpec | None = None
    ) -> JobHandle[R]: ...

    def submit(
        self, kind: str, work: Work, listener: Listener | None = None, join: JoinSpec | None = None
    ) -> JobHandle[object]:  # the overloads above give each caller its work's result type
        """Queue work(ctx); listener (any thread) gets this job's events, else iterate handle.events().

        With join (a generation's prompt, config and observers) the job may run in a batch with other
        joinable jobs instead of through its work, which it runs alone when batching refuses it."""
        with self._cond:
            if self._stopping:
                raise EngineError("the engine is shutting down")
            handle: JobHandle[object] = JobHandle(JobInfo(next(self._ids), kind), work, listener, join)
            ahead = len(self._queue) + (self._running is not None) + len(self._rows)
            self.publish(handle, JobQueued(handle.info, ahead))
            self._queue.append(handle)
            self._cond.notify()
        return handle

    def cancel(self, handle: JobHandle[object]) -> None:
        """Cancel a job: a queued one leaves the queue now (JobCancelled); a running one sees its cancel event."""
        handle.cancel.set()
        with self._cond:
            if handle not in self._queue:
                return
            self._queue.remove(handle)
            self.publish(handle, JobCancelled(handle.info))

    def state(self) -> QueueState:
        """The running job (the first of a batch's rows), the queued ones, and every running job."""
        with self._cond:
            running = tuple(h.info for h in ([self._running] if self._running is not None else self._rows))
            return QueueState(running[0] if running else None, tuple(h.info for h in self._queue), running)

    def shutdown(self, timeout: float | None = 30.0) -> bool:
        """Cancel every job, release the engine and park the thread; True when that happened within timeout.

        The thread is parked, not ended: a thread that used MLX and ends just before the process exits
        races MLX's own teardown ("terminate called without an active exception"); a parked daemon
        thread does not.
        """
        with self._cond:
            self._stopping = True
            queued = list(self._queue)
            for running in ([self._running] if self._running is not None else []) + self._rows:
                running.cancel.set()
        for handle in queued:
            self.cancel(handle)
        with self._cond:
            self._cond.notify_all()
        return self._parked.wait(timeout)

    def take_joiner(self, batchable: Callable[[JobHandle[object]], bool]) -> JobHandle[object] | None:
        """The front queued job when it is joinable and batchable, moved to the running rows (batch_job)."""
        with self._cond:
            if self._stopping or not self._queue or not batchable(self._queue[0]):
                return None
            handle = self._queue.popleft()
            self._rows.append(handle)
            return handle

    def end_row(self, handle: JobHandle[object], event: JobEnd) -> None:
        """A batch row ended: it leaves the running rows, then its terminal event is published (batch_job)."""
        with self._cond:
            if handle in self._rows:
                self._rows.remove(handle)
        handle.set_end(event)
        self.publish(handle, event)

    def publish(self, handle: JobHandle[object], event: JobEvent) -> None:
        """Deliver a job's event to it and its lifecycle events to the observers (any thread)."""
        handle.deliver(event)
        for observer in list(self._observers):
            try:
                observer(event)
            except Exception:
                log.exception("an engine-host observer raised")

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if not self._queue:
                    break
                handle = self._running = self._queue.popleft()
            api = batch_job.batch_api(self, handle)
            if api is not None:
                with self._cond:
                    self._running, self._rows = None, [handle]
                batch_job.run_batch(self, handle, api)
                continue
            try:
                self._run(handle)
            finally:
                with self._cond:
                    self._running = None
                self.publish(handle, handle.end)
        self._engine = None
        _release_memory()
        self._parked.set()
        threading.Event().wait()  # parked for good (see shutdown)

    def _run(self, handle: JobHandle[object]) -> None:
        """Run one job; its terminal event is left in handle.end (published once the job stopped running)."""
        info = handle.info
        if handle.cancel.is_set():
            handle.set_end(JobCancelled(info))
            return
        self.publish(handle, JobStarted(info))
        ctx = JobContext(self, handle)
        try:
            result = handle.work(ctx)
            if inspect.isgenerator(result):
                result = _drive(result, ctx)
            handle.set_end(JobFinished(info, result))
        except JobCancelledError:
            handle.set_end(JobCancelled(info))
        except Exception as exc:  # the job fails; the thread lives on for the next one
            if not isinstance(exc, EngineError):
                log.exception("job %s (%s) failed", info.id, info.kind)
            handle.set_end(JobFailed(info, user_message(exc), error_kind(exc)))


def _drive(generator: Iterator[object], ctx: JobContext) -> object:
    """Emit every value a generator yields; return its return value."""
    while True:
        try:
            event = next(generator)
        except StopIteration as stop:
            return stop.value
        ctx.emit(event)


def _release_memory() -> None:
    """Free what a dropped engine held (weights, caches) back to the system."""
    gc.collect()
    try:
        import mlx.core as mx
    except ImportError:  # pragma: no cover - MLX is a dependency
        return
    mx.clear_cache()
