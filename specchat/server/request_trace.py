"""Records every request, whatever its route, in one place: an ASGI middleware that watches the response
(status, an error's body, a client hanging up) and the request's generation jobs (their stats and errors).

A route starts its job through EngineBackend.start inside the request's own task, so the host publishes the
job's JobQueued there: the trace in this module's context variable claims the job id then, and follows the
job's engine events (backend observers) and its end (host observers) from the engine thread. The record is
added once both the response and every claimed job have ended, whichever comes last."""

from __future__ import annotations

import threading
import time
from contextvars import ContextVar

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from specchat.engine.events import Failed, Finished, GenerationStats
from specchat.engine.owner import JobCancelled, JobEvent, JobFailed, JobFinished, JobQueued

from .backend import EngineBackend
from .errors import SHUTTING_DOWN
from .request_log import (
    CLIENT_GONE,
    CLIENT_GONE_STATUS,
    GenerationFigures,
    RequestLog,
    RequestRecord,
    error_message,
)

# polled every few seconds by an app connected to this server: a record each would push the others out
UNRECORDED_PATHS = frozenset({"/specchat/v1/status"})
MAX_ERROR_BODY = 64 * 1024

_current: ContextVar[RequestTrace | None] = ContextVar("specchat_request_trace", default=None)


class RequestTrace:
    """One request on its way: what was sent back and what its jobs did; adds its record once all ended."""

    def __init__(self, scope: Scope, backend: EngineBackend, log: RequestLog):
        client = scope.get("client")
        self.backend, self.log = backend, log
        self.time, self._began = time.time(), time.monotonic()
        self.client = f"{client[0]}:{client[1]}" if client else ""
        self.method, self.route = str(scope.get("method", "")), str(scope.get("path", ""))
        self.status: int | None = None
        self.error_body = bytearray()
        self.completed = self.client_gone = self.http_done = self.committed = False
        self.crash = ""  # an exception the app raised instead of answering
        self.jobs: set[int] = set()  # the request's job ids not yet ended
        self.job_ids: list[int] = []  # every job id it claimed, in order
        self.stats: list[GenerationStats] = []
        self.engine_error = ""
        self._lock = threading.Lock()

    # --- the HTTP side (the request's task) ---

    def attach(self) -> None:
        """Start following the jobs this request will start."""
        self.backend.host.add_observer(self.on_job_event)
        self.backend.observers.append(self.on_engine_event)

    def sent(self, message: Message) -> None:
        """A message of the response on its way to the client."""
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
        elif message["type"] == "http.response.body":
            if self.status is not None and self.status >= 400 and len(self.error_body) < MAX_ERROR_BODY:
                self.error_body += message.get("body", b"")[: MAX_ERROR_BODY - len(self.error_body)]
            if not message.get("more_body", False):
                self.completed = True

    def received(self, message: Message) -> None:
        """A message from the client: a disconnect before the response ended is a hang-up."""
        if message["type"] == "http.disconnect" and not self.completed:
            self.client_gone = True

    def http_ended(self, crash: BaseException | None = None) -> None:
        """The app is done with the request (crash: what it raised instead of answering)."""
        with self._lock:
            if crash is not None:
                self.crash = f"{type(crash).__name__}: {crash}" if str(crash) else type(crash).__name__
            self.http_done = True
        self._commit_if_ended()

    # --- the job side (the engine thread, or the request's task for JobQueued) ---

    def on_job_event(self, event: JobEvent) -> None:
        """A host lifecycle event: claim a job queued from this request's context, note a claimed job's end."""
        job_id = event.job.id
        with self._lock:
            if isinstance(event, JobQueued):
                if _current.get() is self:
                    self.jobs.add(job_id)
                    self.job_ids.append(job_id)
                return
            if job_id not in self.jobs or not isinstance(event, (JobFinished, JobCancelled, JobFailed)):
                return
            self.jobs.discard(job_id)
            if isinstance(event, JobFailed) and not self.engine_error:
                self.engine_error = event.message
        self._commit_if_ended()

    def on_engine_event(self, job_id: int, event: object) -> None:
        """A generation's engine event (backend observer): its stats, or why it failed."""
        with self._lock:
            if job_id not in self.jobs:
                return
            if isinstance(event, Finished):
                self.stats.append(event.stats)
            elif isinstance(event, Failed):
                self.engine_error = event.message

    # --- the record ---

    def _commit_if_ended(self) -> None:
        with self._lock:
            if self.committed or not self.http_done or self.jobs:
                return
            self.committed = True
            record = self.record()
        self.backend.host.remove_observer(self.on_job_event)
        if self.on_engine_event in self.backend.observers:
            self.backend.observers.remove(self.on_engine_event)
        self.log.add(record)

    def record(self) -> RequestRecord:
        """The finished request's record."""
        status = self.status if self.status is not None else 500
        if self.client_gone:
            status = CLIENT_GONE_STATUS
        figures = GenerationFigures.of(self.stats) if self.stats else None
        return RequestRecord(
            time=self.time,
            client=self.client,
            method=self.method,
            route=self.route,
            status=status,
            duration_s=time.monotonic() - self._began,
            prompt_tokens=figures.prompt_tokens if figures else None,
            completion_tokens=figures.completion_tokens if figures else None,
            decode_tokens_per_s=figures.decode_tokens_per_s if figures else None,
            drafter=figures.drafter if figures else "",
            acceptance=figures.acceptance if figures else None,
            batch_rows_max=figures.batch_rows_max if figures else 0,
            batch_rows_mean=figures.batch_rows_mean if figures else 0.0,
            error=self._error(),
            job_ids=tuple(self.job_ids),
        )

    def _error(self) -> str:
        """What went wrong, the most telling first: a hang-up, the error body, the engine, a crash, a stop."""
        if self.client_gone:
            return CLIENT_GONE
        if self.status is not None and self.status >= 400:
            return error_message(self.status, bytes(self.error_body))
        if self.engine_error or self.crash:
            return self.engine_error or self.crash
        if self.backend.stopping.is_set() and self.stats and self.stats[-1].stop_reason == "cancelled":
            return SHUTTING_DOWN
        return ""


class RequestLogMiddleware:
    """Pure ASGI (Starlette's BaseHTTPMiddleware would hide a client's hang-up from the routes): every HTTP
    request but the status polls becomes one record in `log`."""

    def __init__(self, app: ASGIApp, backend: EngineBackend, log: RequestLog):
        self.app, self.backend, self.log = app, backend, log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request through the app, watching both directions."""
        if scope["type"] != "http" or scope.get("path") in UNRECORDED_PATHS:
            await self.app(scope, receive, send)
            return
        trace = RequestTrace(scope, self.backend, self.log)
        trace.attach()
        token = _current.set(trace)

        async def watched_receive() -> Message:
            message = await receive()
            trace.received(message)
            return message

        async def watched_send(message: Message) -> None:
            trace.sent(message)  # before the send: the hang-up check must know the response ended
            await send(message)

        try:
            await self.app(scope, watched_receive, watched_send)
        except BaseException as exc:
            trace.http_ended(exc)
            raise
        else:
            trace.http_ended()
        finally:
            _current.reset(token)
