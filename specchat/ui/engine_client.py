"""The one Qt adapter of the engine host: it submits jobs and re-emits their events as signals on the UI thread.

Every piece of MLX work (a reply, a load, a baseline measurement, a sweep, an A/B run) is a job on the
host's one thread (specchat/engine/owner); this object only turns job events into signals. Cancel is the
job's threading.Event, set directly from the UI thread. A reply has one failure channel: whatever
stops it (an engine error inside the stream, or the job itself failing before the stream began) arrives
as a Failed engine event on `event`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from jinja2 import TemplateError
from PySide6.QtCore import QObject, Signal, SignalInstance

from specchat.engine import EngineError, Failed, Finished, GenerationConfig, GenerationStats
from specchat.engine.owner import (
    EngineHost,
    JobContext,
    JoinSpec,
    LoadedPair,
    LoadMessage,
    context_length_job,
    load_pair_job,
    reply_job,
)
from specchat.engine.prompt import chat_prompt_ids
from specchat.system.bandwidth import Bandwidth, measure_copy_bandwidth
from specchat.system.machine import chip_name
from specchat.system.memory import read_mlx_memory
from specchat.tuning.baseline import MeasureProgress, measure_baseline_tps

from .draft_check import DraftChecker
from .job_client import JobClient, QtJob
from .job_events import JobHandlers
from .pair_memory import PairMemory
from .tasks import TaskRunner

__all__ = ["EngineClient", "LoadedPair"]
log = logging.getLogger(__name__)
KEEP_TIMEOUT_MS = 3000  # at close: a queued job that ignores cancel must not hold the quit up (its learning is lost)
KEEP_WRITE_S = 60.0  # once the keep runs it is one small file's write, which a busy disk may hold up for seconds


def loaded_dflash(pair: LoadedPair | None) -> str | None:
    """The DFlash drafter folder the pair was loaded with; None for none (or a server's pair)."""
    return pair.dflash if pair is not None else None


class EngineClient(JobClient):
    """The app's MLX work as jobs on the engine host (JobClient): loads, replies, measurements and keeping what
    the controllers learned; what they report arrives as signals."""

    loadStarted = Signal(str)
    loadProgress = Signal(str)
    loaded = Signal(object)  # LoadedPair
    loadFailed = Signal(str)
    # request id, engine event (TextChunk, RoundResult, Finished, Failed, ...); hides QObject.event as QtJob's does
    event = Signal(int, object)  # type: ignore[assignment]
    memoryChanged = Signal(int)  # active MLX memory in bytes
    draftsChecked = Signal(str, object)  # target path, list[DraftCandidate]
    baselineMeasured = Signal(str, float)  # model key, plain-decode tokens per second
    baselineFailed = Signal(str, str)  # model key, message
    bandwidthMeasured = Signal(object)  # system.bandwidth.Bandwidth: this machine's copy bandwidth
    bandwidthFailed = Signal(str)  # why it was not measured

    def __init__(self, parent: QObject | None = None, host: EngineHost | None = None, memory: PairMemory | None = None):
        super().__init__(parent, host)
        self.memory = memory  # keeps what the controllers learned per pair (None: nothing is kept)
        # True when this machine's copy bandwidth is still unmeasured: the next plain-decode measurement, a job
        # queued anyway, measures it first (no job of its own that would stand in the queue)
        self.bandwidth_wanted: Callable[[], bool] = lambda: False
        self.current: QtJob | None = None  # the reply queued or running
        self.batch_rows = 1  # while the app serves, a chat reply may share the API's batch of this many rows
        self.running_detail: str | None = None  # how far the running measurement has got ("24 / 64 tokens")
        self.context_length: int | None = None  # the user's cap, for the loaded engine and each one loaded later
        self.tasks = TaskRunner(self)  # the worker pool for what runs no model, shut down with the client
        self.drafts = DraftChecker(self.tasks, self)
        self.drafts.checked.connect(self.draftsChecked)

    # --- loads ---

    def load_pair(self, target: str, draft: str | None = None, dflash: str | None = None) -> QtJob:
        """Load a pair (and a DFlash drafter for its target) after the queued jobs; the old pair stays loaded
        until the new one is ready (loadStarted / loadProgress / loaded / loadFailed)."""
        return self.load_with(target, load_pair_job(target, draft, dflash=dflash))

    def load_with(self, what: str, work: Callable) -> QtJob:
        """Queue any job that installs an engine (a pair, a server) and returns its LoadedPair; `what` names
        it in messages. loadStarted / loadProgress / loaded / loadFailed follow, as for a pair. With a
        PairMemory, the replaced pair's knowledge is kept first and the new pair starts from its own."""
        work = self.memory.loading(work) if self.memory is not None else work
        job = self.submit("load", self._with_context_length(work))
        job.event.connect(
            JobHandlers(
                started=lambda: self.loadStarted.emit(what),
                progress=self._load_progress,
                finished=self.loaded.emit,
                failed=lambda failed: self.loadFailed.emit(failed.message),
                cancelled=lambda: self.loadFailed.emit(f"loading {Path(what).name} was cancelled"),
                ended=self._memory_changed,
            )
        )
        return job

    def _with_context_length(self, load: Callable) -> Callable:
        """The load job, then the user's context length on the engine it installed, before any other job."""

        def work(ctx: JobContext) -> object:
            pair = load(ctx)
            context_length_job(self.context_length, fit=True)(ctx)
            return pair

        return work

    def set_context_length(self, cap: int | None) -> QtJob:
        """Cap the context of the loaded engine and of each pair loaded later (None: each model's maximum; a
        model that holds no more keeps its own). The engine takes it after the jobs queued before."""
        self.context_length = cap
        return self.submit("context", context_length_job(cap, fit=True))

    def _load_progress(self, event: object) -> None:
        if isinstance(event, LoadMessage):
            self.loadProgress.emit(event.text)

    # --- replies ---

    def generate(
        self,
        messages: list[dict],
        cfg: GenerationConfig,
        system_prompt: str = "",
        enable_thinking: bool = False,
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> int:
        """Queue a reply (cancelling one still going); returns its request id (its events carry it). tools:
        OpenAI-style function specs (the MCP servers' tools) for the chat template."""
        self.cancel()
        work = reply_job([dict(m) for m in messages], cfg, system_prompt, enable_thinking, tools)
        job = self.submit("reply", work, self._chat_join(messages, cfg, system_prompt, enable_thinking, tools))
        job.event.connect(self._reply_handlers(job.id))  # no reference back to the job: it can go
        self.current = job
        return job.id

    def _chat_join(
        self,
        messages: list[dict],
        cfg: GenerationConfig,
        system_prompt: str,
        enable_thinking: bool,
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> JoinSpec | None:
        """While the app serves, what lets a chat reply decode in one batch with the API's requests (a reply
        alone still runs on the engine's own loop); None otherwise, and for messages the template refuses
        (the job says why)."""
        engine = self.host.engine
        if self.batch_rows <= 1 or engine is None:
            return None
        try:
            ids = chat_prompt_ids(engine.tokenizer, messages, system_prompt, enable_thinking, tools=tools)
        except (TemplateError, ValueError) as error:  # the template's refusals: the job renders again and says so
            log.warning("the chat template refused the messages; the reply runs alone: %s", error)
            return None
        except Exception:  # a template is code: anything else is a bug in it, which the job reports as well
            log.exception("the chat template failed; the reply runs alone")
            return None
        return JoinSpec(tuple(ids), cfg, (), self.batch_rows)

    def _reply_handlers(self, request_id: int) -> JobHandlers:
        """A reply's job events as the engine events the views know, each with its request id."""
        stopped = Finished((), "", GenerationStats(stop_reason="cancelled"), True)
        return JobHandlers(
            progress=lambda event: self.event.emit(request_id, event),
            # failed before its stream began (no model, a template error)
            failed=lambda failed: self.event.emit(request_id, Failed(failed.message, failed.kind)),
            cancelled=lambda: self.event.emit(request_id, stopped),  # cancelled while queued: it never ran
            ended=self._memory_changed,
        )

    def cancel(self) -> None:
        """Stop the reply: a queued one never runs, a running one stops at its next round."""
        if self.current is not None:
            self.current.cancel()

    def finished(self, request_id: int) -> None:
        """Forget a request that ended."""
        if self.current is not None and self.current.id == request_id:
            self.current = None

    # --- the plain-decode baseline ---

    def measure_baseline(self, model_key: str) -> QtJob:
        """Measure the loaded target's plain-decode speed (baselineMeasured / baselineFailed follow)."""

        with_bandwidth = self.bandwidth_wanted()

        def work(ctx: JobContext) -> float:
            if str(ctx.engine.target.path) != model_key:
                raise EngineError(f"cannot measure {Path(model_key).name}: it is not the loaded target")
            if with_bandwidth:
                _measure_bandwidth_in(ctx)
            tps = measure_baseline_tps(
                ctx.engine, cancel=ctx.cancel, progress=lambda d, t: ctx.emit(MeasureProgress(d, t))
            )
            if not tps > 0:
                raise EngineError(f"the plain-decode measurement of {Path(model_key).name} gave no speed")
            return float(tps)

        job = self.submit("baseline", work)
        job.event.connect(
            JobHandlers(
                progress=self._measure_progress,
                finished=lambda tps: self._measure_ended(self.baselineMeasured, model_key, tps),
                failed=lambda failed: self._measure_ended(self.baselineFailed, model_key, failed.message),
                cancelled=lambda: self._measure_ended(self.baselineFailed, model_key, "the measurement was cancelled"),
            )
        )
        return job

    def _measure_progress(self, event: object) -> None:
        if isinstance(event, Bandwidth):
            self.bandwidthMeasured.emit(event)
        elif isinstance(event, MeasureProgress):
            self.running_detail = f"{event.done} / {event.total} tokens"
            self._state_changed()  # a reply waiting behind it says how far it has got

    def _measure_ended(self, signal: SignalInstance, model_key: str, outcome: object) -> None:
        self.running_detail = None  # before the signal: what it starts sees no measurement running
        signal.emit(model_key, outcome)

    def measure_bandwidth(self) -> QtJob:
        """Measure this machine's copy bandwidth as a job, so that no model work runs beside it
        (bandwidthMeasured / bandwidthFailed follow)."""
        job = self.submit("bandwidth", lambda _ctx: measure_copy_bandwidth(chip_name()))
        job.event.connect(
            JobHandlers(
                finished=self.bandwidthMeasured.emit,
                failed=lambda failed: self.bandwidthFailed.emit(failed.message),
                cancelled=lambda: self.bandwidthFailed.emit("the bandwidth measurement was cancelled"),
            )
        )
        return job

    # --- no MLX work ---

    def check_drafts(self, target: str, candidates: list[str]) -> None:
        """Ask which candidate folders can draft for target, off the engine queue (draftsChecked follows)."""
        self.drafts.check(target, list(candidates))

    def keep_knowledge(self, timeout_ms: int = KEEP_TIMEOUT_MS) -> bool:
        """Save what the loaded pair's controllers learned, after the queued jobs (at close); True when saved."""
        if self.memory is None or self.closed:
            return False
        memory, started = self.memory, threading.Event()

        def keep(ctx: JobContext) -> bool:
            started.set()
            return memory.keep(ctx)

        try:
            handle = self.host.submit("keep", keep)
            if not started.wait(timeout_ms / 1000):
                self.host.cancel(handle)
                raise TimeoutError(f"a job ahead of it did not end within {timeout_ms / 1000} s")
            return bool(handle.result(KEEP_WRITE_S))
        except (EngineError, TimeoutError) as exc:
            log.warning("could not keep what the speculation controllers learned: %s", exc)
            return False

    def shutdown(self, timeout_ms: int = 30000) -> None:
        """Cancel every job, stop the worker pool and release the engine (when this client owns the host)."""
        self.closed = True
        self.cancel()
        self.tasks.shutdown()
        if self._owns_host:
            self.host.shutdown(timeout_ms / 1000)

    def _memory_changed(self) -> None:
        active, _peak, _cache = read_mlx_memory()
        if active is not None:
            self.memoryChanged.emit(active)


def _measure_bandwidth_in(ctx: JobContext) -> None:
    """Measure the copy bandwidth inside a job and send it as the job's progress; a failure only costs it."""
    try:
        ctx.emit(measure_copy_bandwidth(chip_name()))
    except (MemoryError, OSError) as exc:
        log.warning("the bandwidth measurement failed: %s", exc)
