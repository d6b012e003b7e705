"""The engine host's jobs as the UI thread sees them: QtJob (one job's events as a signal), JobClient (submits
jobs to the host in order and relays their events to the UI thread) and the queue in words."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal

from specchat.engine.owner import TERMINAL, EngineHost, JobEvent, JobHandle, JoinSpec, QueueState

KIND_NAMES = {
    "reply": "reply",
    "load": "load",
    "baseline": "plain-decode measurement",
    "sweep": "sweep",
    "ab": "A/B",
    "suite": "suite",
    "bandwidth": "bandwidth measurement",
    "keep": "saving what speculation learned",
    "context": "context length change",
}


class QtJob(QObject):
    """One submitted job seen from the UI thread: its events arrive on `event`, in order, ending with one of
    JobFinished, JobFailed (its message and kind: the job's one failure channel) or JobCancelled."""

    # JobQueued, JobStarted, JobProgress..., then the terminal event. The name hides QObject.event(QEvent) from
    # Python callers only: Qt's own event delivery still reaches the C++ handler (a signal is no override).
    event = Signal(object)  # type: ignore[assignment]

    def __init__(
        self, host: EngineHost, kind: str, work: Callable, relay: Callable[[JobEvent], None], join: JoinSpec | None
    ):
        super().__init__()
        self._host = host
        self.handle: JobHandle = host.submit(kind, work, listener=relay, join=join)

    @property
    def id(self) -> int:
        """The job's id (a reply's request id)."""
        return self.handle.id

    def cancel(self) -> None:
        """Cancel it: a queued job never runs, a running one stops at its next check."""
        self._host.cancel(self.handle)

    def wait(self, ms: int) -> bool:
        """Block until the job ended on the engine thread (tests, shutdown); False after ms."""
        return self.handle.wait(ms / 1000)


class JobClient(QObject):
    """Owns (or shares) an EngineHost; submits jobs there, in order, and re-emits their events on the UI thread."""

    queueChanged = Signal(object)  # QueueState: what runs and what waits
    _relay = Signal(object)  # a job event, from any thread, to the UI thread
    _state_relay = Signal()

    def __init__(self, parent: QObject | None = None, host: EngineHost | None = None):
        super().__init__(parent)
        self._owns_host = host is None
        self.host = host or EngineHost()
        self.closed = False  # set by shutdown: job events that arrive later are dropped
        self._jobs: dict[int, QtJob] = {}
        self._relay.connect(self._dispatch, Qt.ConnectionType.QueuedConnection)
        self._state_relay.connect(self._state_changed, Qt.ConnectionType.QueuedConnection)
        self.host.add_observer(self._observe)

    @property
    def engine(self):
        """The host's current engine (for identity checks; only jobs may call it)."""
        return self.host.engine

    def submit(self, kind: str, work: Callable, join: JoinSpec | None = None) -> QtJob:
        """Queue work(ctx: JobContext) on the engine thread after the jobs before it; its events arrive on
        the returned job's `event`. With join, a generation may share a batch (see JoinSpec)."""
        job = QtJob(self.host, kind, work, self._relay.emit, join)
        self._jobs[job.id] = job
        return job

    def _dispatch(self, event: JobEvent) -> None:
        job = self._jobs.get(event.job.id)
        if job is None or self.closed:  # after shutdown the views are going: a late load must start no job
            return
        if isinstance(event, TERMINAL):
            del self._jobs[event.job.id]
        job.event.emit(event)

    def _observe(self, _event: JobEvent) -> None:
        """Any job's lifecycle event (on any thread): the queue display needs refreshing."""
        try:
            self._state_relay.emit()
        except RuntimeError:  # this adapter was deleted with its window; the host lives on
            self.host.remove_observer(self._observe)

    def _state_changed(self) -> None:
        self.queueChanged.emit(self.host.state())


def waiting_text(state: QueueState, job_id: int, detail: str | None = None) -> str | None:
    """What a queued job waits for ('Waiting for the plain-decode measurement (24 / 64 tokens) to finish…'),
    None once it runs; detail says how far the running job has got."""
    ahead = state.ahead_of(job_id)
    if ahead is None or state.running is None:
        return None
    running = KIND_NAMES.get(state.running.kind, state.running.kind) + (f" ({detail})" if detail else "")
    more = f" and {ahead - 1} more queued job{'s' if ahead > 2 else ''}" if ahead > 1 else ""
    return f"Waiting for the {running}{more} to finish…"


def queue_text(state: QueueState) -> str:
    """'Running: reply · queued: sweep, A/B' (empty when the engine is idle)."""
    parts = []
    if state.running is not None:
        together = len(state.running_batch) - 1  # the other rows of a batch of generations
        more = f" and {together} more in a batch" if together > 0 else ""
        parts.append(f"Running: {KIND_NAMES.get(state.running.kind, state.running.kind)}{more}")
    if state.queued:
        parts.append("queued: " + ", ".join(KIND_NAMES.get(i.kind, i.kind) for i in state.queued))
    return " · ".join(parts)
