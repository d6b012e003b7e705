"""The Qt adapter of the engine host: it submits jobs and re-emits their events as signals on the UI thread.

Every piece of MLX work (a reply, a load, a baseline measurement, a sweep, an A/B run) is a job on the
host's one thread (specchat/engine/owner); this object only turns job events into signals. Cancel is the
job's threading.Event, set directly from the UI thread.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import mlx.core as mx
from PySide6.QtCore import QObject, Qt, Signal

from specchat.engine import EngineError, Finished, GenerationConfig, GenerationStats
from specchat.engine.compat import check_pair
from specchat.engine.owner import LoadedPair, LoadMessage, load_pair_job, reply_job
from specchat.engine.owner import (TERMINAL, EngineHost, JobCancelled, JobContext, JobFailed, JobFinished, JobHandle,
                             JobProgress, JobStarted, QueueState)
from specchat.tuning.baseline import measure_baseline_tps

__all__ = ["DraftCandidate", "EngineWorker", "LoadedPair", "QtJob", "queue_text"]
KIND_NAMES = {"reply": "reply", "load": "load", "baseline": "plain-decode measurement", "sweep": "sweep",
              "ab": "A/B"}


@dataclass(frozen=True)
class DraftCandidate:
    """A folder that might draft for the selected target, and whether it can."""

    path: str
    compatible: bool
    reason: str = ""


class QtJob(QObject):
    """One submitted job seen from the UI thread: its events arrive on `event`, in order."""

    event = Signal(object)  # JobQueued, JobStarted, JobProgress, then JobFinished / JobFailed / JobCancelled

    def __init__(self, worker: "EngineWorker"):
        super().__init__()
        self.worker = worker
        self.handle: JobHandle | None = None

    @property
    def id(self) -> int:
        """The job's id (a reply's request id)."""
        return self.handle.id

    def cancel(self) -> None:
        """Cancel it: a queued job never runs, a running one stops at its next check."""
        self.worker.host.cancel(self.handle)


class EngineWorker(QObject):
    """Submits jobs to the engine host and re-emits their events as signals; lives on the UI thread."""

    loadStarted = Signal(str)
    loadProgress = Signal(str)
    loaded = Signal(object)            # LoadedPair
    loadFailed = Signal(str)
    event = Signal(int, object)        # request id, engine event (TextChunk, RoundResult, Finished, Failed, ...)
    generationError = Signal(int, str)  # request id, message of an exception outside the engine's own events
    memoryChanged = Signal(int)        # active MLX memory in bytes
    draftsChecked = Signal(str, object)  # target path, list[DraftCandidate]
    baselineMeasured = Signal(str, float)  # model key, plain-decode tokens per second
    baselineFailed = Signal(str, str)      # model key, message
    queueChanged = Signal(object)      # QueueState: what runs and what waits
    _relay = Signal(object)            # a job event, from any thread, to the UI thread
    _state_relay = Signal()
    _drafts_relay = Signal(str, object)

    def __init__(self, host: EngineHost):
        super().__init__()
        self.host = host
        self._jobs: dict[int, QtJob] = {}
        self._tokenizers: dict[Path, object] = {}
        self._relay.connect(self._dispatch, Qt.ConnectionType.QueuedConnection)
        self._state_relay.connect(self._state_changed, Qt.ConnectionType.QueuedConnection)
        self._drafts_relay.connect(self.draftsChecked, Qt.ConnectionType.QueuedConnection)
        host.add_observer(self._observe)

    @property
    def engine(self):
        """The host's current engine (for identity checks; only jobs may call it)."""
        return self.host.engine

    def submit(self, kind: str, work) -> QtJob:
        """Queue work(ctx: JobContext) on the engine thread; its events arrive on the returned job's `event`."""
        job = QtJob(self)
        job.handle = self.host.submit(kind, work, listener=self._relay.emit)
        self._jobs[job.handle.id] = job
        return job

    def _dispatch(self, event) -> None:
        job = self._jobs.get(event.job.id)
        if job is None:
            return
        if isinstance(event, TERMINAL):
            del self._jobs[event.job.id]
        job.event.emit(event)

    def _observe(self, _event) -> None:
        """Any job's lifecycle event (on any thread): the queue display needs refreshing."""
        try:
            self._state_relay.emit()
        except RuntimeError:  # this adapter was deleted with its window; the host lives on
            self.host.remove_observer(self._observe)

    def _state_changed(self) -> None:
        self.queueChanged.emit(self.host.state())

    # --- the jobs the window sends ---

    def load_pair(self, target: str, draft: str | None) -> QtJob:
        """Load a pair beside the current one; it replaces it only when it loaded (loaded / loadFailed follow)."""
        return self.load_with(target, load_pair_job(target, draft))

    def load_with(self, what: str, work) -> QtJob:
        """Queue any job that installs an engine (a pair, a server) and returns its LoadedPair; `what` names
        it in messages. loadStarted / loadProgress / loaded / loadFailed follow, as for a pair."""
        job = self.submit("load", work)
        job.event.connect(lambda event: self._load_event(what, event))
        return job

    def _load_event(self, target: str, event) -> None:
        if isinstance(event, JobStarted):
            self.loadStarted.emit(target)
        elif isinstance(event, JobProgress) and isinstance(event.event, LoadMessage):
            self.loadProgress.emit(event.event.text)
        elif isinstance(event, JobFinished):
            self.loaded.emit(event.result)
        elif isinstance(event, JobFailed):
            self.loadFailed.emit(event.message)
        elif isinstance(event, JobCancelled):
            self.loadFailed.emit(f"loading {Path(target).name} was cancelled")
        if isinstance(event, TERMINAL):
            self.memoryChanged.emit(mx.get_active_memory())

    def generate(self, messages: list[dict], cfg: GenerationConfig, system_prompt: str = "",
                 enable_thinking: bool = False) -> QtJob:
        """Stream one reply; every engine event goes out on `event` tagged with the job id."""
        job = self.submit("reply", reply_job(messages, cfg, system_prompt, enable_thinking))
        job.event.connect(partial(self._reply_event, job.id))  # no reference back to the job: it can go
        return job

    def _reply_event(self, request_id: int, event) -> None:
        if isinstance(event, JobProgress):
            self.event.emit(request_id, event.event)
        elif isinstance(event, JobFailed):
            self.generationError.emit(request_id, event.message)
        elif isinstance(event, JobCancelled):  # cancelled while queued: it never ran
            self.event.emit(request_id, Finished((), "", GenerationStats(stop_reason="cancelled"), True))
        if isinstance(event, TERMINAL):
            self.memoryChanged.emit(mx.get_active_memory())

    def measure_baseline(self, model_key: str) -> QtJob:
        """Measure the loaded target's plain-decode speed (the dashboard's break-even line)."""

        def work(ctx: JobContext) -> float:
            if str(ctx.engine.target.path) != model_key:
                raise EngineError(f"cannot measure {Path(model_key).name}: it is not the loaded target")
            tps = measure_baseline_tps(ctx.engine, cancel=ctx.cancel)
            if not tps > 0:
                raise EngineError(f"the plain-decode measurement of {Path(model_key).name} gave no speed")
            return float(tps)

        job = self.submit("baseline", work)
        job.event.connect(lambda event: self._baseline_event(model_key, event))
        return job

    def _baseline_event(self, model_key: str, event) -> None:
        if isinstance(event, JobFinished):
            self.baselineMeasured.emit(model_key, event.result)
        elif isinstance(event, JobFailed):
            self.baselineFailed.emit(model_key, event.message)
        elif isinstance(event, JobCancelled):
            self.baselineFailed.emit(model_key, "the measurement was cancelled")

    # --- no MLX work: off the queue, so a long sweep does not hold the draft list back ---

    def check_drafts(self, target: str, candidates: list[str]) -> None:
        """Check each candidate against the target on the side thread (draftsChecked follows)."""
        _side_host().submit("check_drafts", lambda _ctx: self._check_drafts(target, list(candidates)),
                            listener=lambda _event: None)

    def _check_drafts(self, target: str, candidates: list[str]) -> None:
        results = []
        for path in candidates:
            try:
                ok, reason = self._pair(target, path)
            except Exception as exc:  # an unreadable folder is greyed, not fatal
                ok, reason = False, f"cannot read it: {_message(exc)}"
            results.append(DraftCandidate(path, ok, reason))
        self._drafts_relay.emit(target, results)

    def _pair(self, target: str, draft: str) -> tuple[bool, str]:
        try:
            from specchat.hub.pairing import pair_report
        except ImportError:  # the model manager is optional: fall back to the engine's tokenizer check
            report = check_pair(self._tokenizer(target), self._tokenizer(draft))
        else:
            report = pair_report(Path(target), Path(draft), self._tokenizers)
        return report.compatible, report.reason

    def _tokenizer(self, path: str):
        from specchat.upstream.mlx_lm import load_tokenizer

        key = Path(path).resolve()
        if key not in self._tokenizers:
            self._tokenizers[key] = load_tokenizer(key)
        return self._tokenizers[key]


def queue_text(state: QueueState) -> str:
    """'Running: reply · queued: sweep, A/B' (empty when the engine is idle)."""
    parts = []
    if state.running is not None:
        parts.append(f"Running: {KIND_NAMES.get(state.running.kind, state.running.kind)}")
    if state.queued:
        parts.append("queued: " + ", ".join(KIND_NAMES.get(i.kind, i.kind) for i in state.queued))
    return " · ".join(parts)


_SIDE: list[EngineHost] = []


def _side_host() -> EngineHost:
    """One long-lived thread for work that reads folders but runs no model (it never holds an engine)."""
    if not _SIDE:
        _SIDE.append(EngineHost("side"))
    return _SIDE[0]


def _message(exc: Exception) -> str:
    logging.getLogger(__name__).error("%s: %s", type(exc).__name__, exc, exc_info=exc)  # traceback to the log
    return str(exc) if isinstance(exc, EngineError) else f"{type(exc).__name__}: {exc}"
