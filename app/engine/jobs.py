"""One owner for the engine: a plain job queue that runs every piece of MLX work on one thread.

A job is a function `work(ctx) -> result` (or a generator function whose yields are progress events
and whose return value is the result). Jobs run one at a time, in submission order, on the host's
thread; each has an id, a cancel event, its lifecycle events and a result. No Qt here: the Qt worker,
the command line and an HTTP server all adapt the same queue.
"""

from __future__ import annotations

import gc
import inspect
import itertools
import logging
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .errors import EngineError

log = logging.getLogger(__name__)
NO_MODEL = "no model is loaded: choose a target model folder and press Load"


class JobError(EngineError):
    """A job failed; the message is the job's own error message."""


class JobCancelledError(JobError):
    """The job was cancelled (before it started, or its work raised this to say so)."""


@dataclass(frozen=True)
class JobInfo:
    """Which job: its id (unique per host, increasing) and its kind ("reply", "load", "sweep", ...)."""

    id: int
    kind: str


@dataclass(frozen=True)
class JobQueued:
    """The job joined the queue with `ahead` jobs (queued or running) before it."""

    job: JobInfo
    ahead: int


@dataclass(frozen=True)
class JobStarted:
    """The job began on the engine thread."""

    job: JobInfo


@dataclass(frozen=True)
class JobProgress:
    """One event the job's work emitted (an engine event, a sweep event, a load message...)."""

    job: JobInfo
    event: object


@dataclass(frozen=True)
class JobFinished:
    """The job's work returned; result is what it returned (a cancelled run may return a partial result)."""

    job: JobInfo
    result: object


@dataclass(frozen=True)
class JobFailed:
    """The job's work raised; message is meant for the user."""

    job: JobInfo
    message: str
    error_type: str


@dataclass(frozen=True)
class JobCancelled:
    """The job was cancelled before it ran (or its work raised JobCancelledError)."""

    job: JobInfo


JobEvent = JobQueued | JobStarted | JobProgress | JobFinished | JobFailed | JobCancelled
TERMINAL = (JobFinished, JobFailed, JobCancelled)


@dataclass(frozen=True)
class QueueState:
    """What the host is doing: the running job (or None) and the queued ones in order."""

    running: JobInfo | None
    queued: tuple[JobInfo, ...]

    def ahead_of(self, job_id: int) -> int | None:
        """How many jobs run before a queued job (None when it is not queued)."""
        for index, info in enumerate(self.queued):
            if info.id == job_id:
                return index + (self.running is not None)
        return None


class JobContext:
    """What a job's work gets: the host (and its engine), the cancel event and emit(event)."""

    def __init__(self, host: "EngineHost", handle: "JobHandle"):
        self.host, self.handle, self.cancel = host, handle, handle.cancel

    @property
    def engine(self):
        """The loaded engine; EngineError when none is loaded."""
        if self.host.engine is None:
            raise EngineError(NO_MODEL)
        return self.host.engine

    def emit(self, event: object) -> None:
        """Send a progress event to the job's consumer."""
        self.handle._deliver(JobProgress(self.handle.info, event))


class JobHandle:
    """A submitted job: its id and kind, cancel, its events (listener or events()) and its result."""

    def __init__(self, info: JobInfo, work: Callable, listener: Callable[[JobEvent], None] | None):
        self.info, self.work = info, work
        self.cancel = threading.Event()
        self._listener = listener
        self._events: queue.SimpleQueue | None = None if listener else queue.SimpleQueue()
        self._done = threading.Event()
        self.outcome: JobEvent | None = None
        self._pending_end: JobEvent | None = None  # set by the host when the work ends

    @property
    def id(self) -> int:
        """The job's id."""
        return self.info.id

    @property
    def kind(self) -> str:
        """The job's kind."""
        return self.info.kind

    @property
    def done(self) -> bool:
        """True once the job finished, failed or was cancelled."""
        return self._done.is_set()

    def _deliver(self, event: JobEvent) -> None:
        if isinstance(event, TERMINAL):
            self.outcome = event
        if self._listener is None:
            self._events.put(event)
        else:
            try:
                self._listener(event)
            except Exception:  # a consumer's bug must not stop the engine thread
                log.exception("job %s: its listener raised", self.id)
        if isinstance(event, TERMINAL):
            self._done.set()

    def events(self, poll_s: float = 0.1) -> Iterator[JobEvent]:
        """Every event of this job up to and including the terminal one (jobs submitted without a listener)."""
        if self._events is None:
            raise EngineError("this job's events go to its listener")
        while True:
            try:
                event = self._events.get(timeout=poll_s)  # a timeout lets signal handlers run
            except queue.Empty:
                continue
            yield event
            if isinstance(event, TERMINAL):
                return

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the job ends; False on timeout."""
        return self._done.wait(timeout)

    def result(self, timeout: float | None = None):
        """The job's result; JobError when it failed, JobCancelledError when cancelled, TimeoutError."""
        if not self.wait(timeout):
            raise TimeoutError(f"job {self.id} ({self.kind}) did not end within {timeout} s")
        outcome = self.outcome
        if isinstance(outcome, JobFailed):
            raise JobError(outcome.message)
        if isinstance(outcome, JobCancelled):
            raise JobCancelledError(f"the {self.kind} job was cancelled")
        return outcome.result


class EngineHost:
    """Owns one thread and the current engine; runs submitted jobs there one at a time, in order."""

    def __init__(self, name: str = "engine"):
        self._engine = None
        self._cond = threading.Condition(threading.RLock())
        self._queue: deque[JobHandle] = deque()
        self._running: JobHandle | None = None
        self._observers: list[Callable[[JobEvent], None]] = []
        self._ids = itertools.count(1)
        self._stopping = False
        self._parked = threading.Event()
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.thread.start()

    @property
    def engine(self):
        """The engine jobs use (None before the first load). Only jobs may call it."""
        return self._engine

    def on_thread(self) -> bool:
        """True on the host's own thread."""
        return threading.current_thread() is self.thread

    def install(self, engine) -> None:
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

    def submit(self, kind: str, work: Callable, listener: Callable[[JobEvent], None] | None = None) -> JobHandle:
        """Queue work(ctx); listener (any thread) gets this job's events, else iterate handle.events()."""
        with self._cond:
            if self._stopping:
                raise EngineError("the engine is shutting down")
            handle = JobHandle(JobInfo(next(self._ids), kind), work, listener)
            ahead = len(self._queue) + (self._running is not None)
            self._publish(handle, JobQueued(handle.info, ahead))
            self._queue.append(handle)
            self._cond.notify()
        return handle

    def cancel(self, handle: JobHandle) -> None:
        """Cancel a job: a queued one leaves the queue now (JobCancelled); a running one sees its cancel event."""
        handle.cancel.set()
        with self._cond:
            if handle not in self._queue:
                return
            self._queue.remove(handle)
            self._publish(handle, JobCancelled(handle.info))

    def state(self) -> QueueState:
        """The running job and the queued ones."""
        with self._cond:
            running = self._running.info if self._running is not None else None
            return QueueState(running, tuple(h.info for h in self._queue))

    def shutdown(self, timeout: float | None = 30.0) -> bool:
        """Cancel every job, release the engine and park the thread; True when that happened within timeout.

        The thread is parked, not ended: a thread that used MLX and ends just before the process exits
        races MLX's own teardown ("terminate called without an active exception"); a parked daemon
        thread does not.
        """
        with self._cond:
            self._stopping = True
            queued = list(self._queue)
            if self._running is not None:
                self._running.cancel.set()
        for handle in queued:
            self.cancel(handle)
        with self._cond:
            self._cond.notify_all()
        return self._parked.wait(timeout)

    def _publish(self, handle: JobHandle, event: JobEvent) -> None:
        handle._deliver(event)
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
            try:
                self._run(handle)
            finally:
                with self._cond:
                    self._running = None
                self._publish(handle, handle._pending_end)
        self._engine = None
        _release_memory()
        self._parked.set()
        threading.Event().wait()  # parked for good (see shutdown)

    def _run(self, handle: JobHandle) -> None:
        """Run one job; its terminal event is left in handle._pending_end (published once it stopped running)."""
        info = handle.info
        if handle.cancel.is_set():
            handle._pending_end = JobCancelled(info)
            return
        self._publish(handle, JobStarted(info))
        ctx = JobContext(self, handle)
        try:
            result = handle.work(ctx)
            if inspect.isgenerator(result):
                result = _drive(result, ctx)
            handle._pending_end = JobFinished(info, result)
        except JobCancelledError:
            handle._pending_end = JobCancelled(info)
        except Exception as exc:  # the job fails; the thread lives on for the next one
            if not isinstance(exc, EngineError):
                log.exception("job %s (%s) failed", info.id, info.kind)
            message = str(exc) if isinstance(exc, EngineError) else f"{type(exc).__name__}: {exc}"
            handle._pending_end = JobFailed(info, message, type(exc).__name__)


def _drive(generator, ctx: JobContext):
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
