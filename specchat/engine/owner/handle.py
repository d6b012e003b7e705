"""A submitted job as its submitter sees it (JobHandle[object]) and as its work sees it (JobContext)."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Generic, TypeVar, cast

from ..errors import EngineError, error_from
from .events import TERMINAL, JobCancelled, JobEnd, JobEvent, JobFailed, JobFinished, JobInfo, JobProgress

if TYPE_CHECKING:
    from .batch_job import JoinSpec
    from .host import EngineHost
    from .hosted import HostedEngine

log = logging.getLogger(__name__)
NO_MODEL = "no model is loaded: choose a target model folder and press Load"


class JobCancelledError(EngineError):
    """The job was cancelled (before it started, or its work raised this to say so)."""


class JobContext:
    """What a job's work gets: the host (and its engine), the cancel event and emit(event)."""

    def __init__(self, host: EngineHost, handle: JobHandle[object]):
        self.host, self.handle, self.cancel = host, handle, handle.cancel

    @property
    def engine(self) -> HostedEngine:  # an Engine, a RemoteEngine or a cluster's: whatever the last load installed
        """The loaded engine; EngineError when none is loaded."""
        engine = self.host.engine
        if engine is None:
            raise EngineError(NO_MODEL)
        return engine

    def emit(self, event: object) -> None:
        """Send a progress event to the job's consumer."""
        self.handle.deliver(JobProgress(self.handle.info, event))


# A job's work: called with its context on the engine thread; returns the result, or is a generator
# function whose yields are progress events and whose return value is the result.
Work = Callable[[JobContext], object]
Listener = Callable[[JobEvent], None]
R = TypeVar("R", covariant=True)  # what a job's work returns: each kind of job its own


class JobHandle(Generic[R]):
    """A submitted job: its id and kind, cancel, its events (listener or events()) and its result;
    join when it is a generation that may run in a batch with others (see batch_job)."""

    def __init__(self, info: JobInfo, work: Work, listener: Listener | None, join: JoinSpec | None = None):
        self.info, self.work, self.join = info, work, join
        self.cancel = threading.Event()
        self._listener = listener
        self._events: queue.SimpleQueue[JobEvent] | None = None if listener else queue.SimpleQueue()
        self._done = threading.Event()
        self.outcome: JobEnd | None = None
        self._end: JobEnd | None = None

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

    @property
    def end(self) -> JobEnd:
        """The terminal event the host left when the work ended (published once the job stopped running)."""
        if self._end is None:
            raise EngineError(f"job {self.id} ({self.kind}) has not ended")
        return self._end

    def set_end(self, event: JobEnd) -> None:
        """Record the terminal event (the host, when the work returns, raises or was cancelled)."""
        self._end = event

    def deliver(self, event: JobEvent) -> None:
        """Hand one event to the job's listener or its events() queue (any thread)."""
        if isinstance(event, TERMINAL):
            self.outcome = event
        if self._listener is not None:
            try:
                self._listener(event)
            except Exception:  # a consumer's bug must not stop the engine thread
                log.exception("job %s: its listener raised", self.id)
        elif self._events is not None:  # always, without a listener
            self._events.put(event)
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

    def result(self, timeout: float | None = None) -> R:
        """The job's result; the failure's own error class (ConfigError, ModelLoadError, ...) when it failed,
        JobCancelledError when cancelled, TimeoutError when it did not end in time."""
        if not self.wait(timeout):
            raise TimeoutError(f"job {self.id} ({self.kind}) did not end within {timeout} s")
        outcome = self.outcome
        if isinstance(outcome, JobFailed):
            raise error_from(outcome.kind, outcome.message)
        if isinstance(outcome, JobCancelled):
            raise JobCancelledError(f"the {self.kind} job was cancelled")
        assert isinstance(outcome, JobFinished)  # the only other terminal event; _done is set after one
        return cast(R, outcome.result)  # what this handle's work returned (EngineHost.submit typed it)
