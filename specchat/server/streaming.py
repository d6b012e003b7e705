"""One request's job, seen from asyncio: its events arrive from the engine thread through a queue;
a client that goes away cancels the job."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from starlette.requests import Request

from specchat.engine.config import GenerationConfig
from specchat.engine.errors import ErrorKind
from specchat.engine.events import Event, Failed, Finished, GenerationStats, TextChunk
from specchat.engine.json_types import JSONObject, objects
from specchat.engine.logprobs import TokenLogprob
from specchat.engine.modes import StopReason
from specchat.engine.owner import JobCancelled, JobEvent, JobFailed, JobFinished, JobHandle, JobProgress, JobQueued

from .backend import EngineBackend
from .errors import SHUTTING_DOWN, ApiError, shutting_down
from .kept_tokens import KeptTokens
from .logprobs import chat_logprobs, completion_logprobs, text_end
from .requests import ApiRequest
from .responses import ResponseShape, StopMatcher, StreamedChoice, finish_reason, usage
from .tools import ToolCallParser, read_reply
from .wire import ENGINE_EVENTS

DISCONNECT_POLL_S = 0.25


class JobStream:
    """Starts one generation job and yields its engine events to the request's coroutine."""

    def __init__(self, backend: EngineBackend, request: Request):
        self.backend, self.request = backend, request
        self.handle: JobHandle[object] | None = None
        self._queue: asyncio.Queue[JobEvent] = asyncio.Queue()

    async def start(self, prompt_ids: list[int], cfg: GenerationConfig) -> None:
        """Queue the job (503 when the queue is full)."""
        loop = asyncio.get_running_loop()

        def deliver(event: JobEvent) -> None:  # on the engine thread
            loop.call_soon_threadsafe(self._queue.put_nowait, event)

        self.handle = self.backend.start(prompt_ids, cfg, deliver)

    def cancel(self) -> None:
        """Stop the job (it leaves the queue, or stops at the next round)."""
        if self.handle is not None and not self.handle.done:
            self.backend.cancel(self.handle)

    def _cut_by_shutdown(self, event: object) -> bool:
        """True for the end of a job the server's shutdown stopped (cancelled, or finished cancelled)."""
        if not self.backend.stopping.is_set():
            return False
        if isinstance(event, JobCancelled):
            return True
        return isinstance(event, JobProgress) and isinstance(event.event, Finished) and event.event.cancelled

    async def events(self, include_queue: bool = False) -> AsyncIterator[Event | JSONObject]:
        """Engine events until the job ends (and {"type": "Queued", "ahead": n} when asked);
        cancels the job when the client disconnects or this generator is closed early. Once the server
        stops, what has come is passed on and then the shutdown error, without waiting for the engine:
        a long prefill chunk must not outlast the connections' grace."""
        try:
            while True:
                event = await self._next_event()
                if event is _DISCONNECTED:
                    self.cancel()
                    return
                if event is _STOPPED or self._cut_by_shutdown(event):  # never a silent normal end
                    yield Failed(SHUTTING_DOWN, ErrorKind.SHUTDOWN)
                    return
                if isinstance(event, JobQueued) and include_queue:
                    yield {"type": "Queued", "ahead": event.ahead}
                elif isinstance(event, JobProgress) and isinstance(event.event, ENGINE_EVENTS):  # all a job emits
                    yield event.event
                elif isinstance(event, JobFailed):
                    yield Failed(event.message, event.kind)
                    return
                elif isinstance(event, (JobFinished, JobCancelled)):
                    return
        finally:
            self.cancel()

    async def _next_event(self) -> JobEvent | object:
        """The next queued event; _STOPPED once the server stops and none is left, _DISCONNECTED when the
        client has gone."""
        while self._queue.empty():
            if self.backend.stopping.is_set():
                return _STOPPED
            try:
                return await asyncio.wait_for(self._queue.get(), DISCONNECT_POLL_S)
            except TimeoutError:
                if await self.request.is_disconnected():
                    return _DISCONNECTED
        return self._queue.get_nowait()


_STOPPED, _DISCONNECTED = object(), object()  # what _next_event says in place of an event


async def openai_whole(stream: JobStream, req: ApiRequest, prompt_tokens: int) -> JSONObject:
    """Run the job to its end and build the non-streamed response (tool calls read out when the chat had tools)."""
    shape, stops = ResponseShape(req.kind, req.model), StopMatcher(req.stop)
    text: list[str] = []
    scores, kept = LogprobBuffer(req, stream.backend), _kept_tokens(stream, req)
    stats: GenerationStats | None = None
    async for event in stream.events():
        if isinstance(event, TextChunk):
            text.append(_feed(stops, kept, scores, event))
            if stops.stopped:
                stream.cancel()  # the rest is not wanted; Finished still brings the stats
        elif isinstance(event, Finished):
            stats = event.stats
        elif isinstance(event, Failed):
            raise _engine_error(event)
    text.append(stops.flush())
    scores.add(kept.finish())
    parser = _parser(req)
    cut = _cut(stats, stops)
    content = read_reply("".join(text), parser, cut) if parser else "".join(text)
    calls = parser.calls if parser else []
    reason = finish_reason(stats, stops.stopped, bool(calls), bool(parser and parser.cut))
    return shape.whole(content, reason, usage(prompt_tokens, stats, kept.count), calls, scores.take())


async def openai_sse(stream: JobStream, req: ApiRequest, prompt_tokens: int) -> AsyncIterator[dict[str, str]]:
    """The streamed response as server-sent events: openai_chunks, each as JSON, then [DONE]."""
    async for body in openai_chunks(stream, req, prompt_tokens):
        yield _data(body)
    yield {"data": "[DONE]"}


async def openai_chunks(stream: JobStream, req: ApiRequest, prompt_tokens: int) -> AsyncIterator[JSONObject]:
    """The streamed response's bodies: chunks of text (and tool-call deltas), the finish chunk, usage if asked;
    an engine failure ends them with its error body. The other wire formats (Anthropic, Responses, Ollama)
    are built from these bodies as they are, never from their JSON."""
    shape, stops = ResponseShape(req.kind, req.model), StopMatcher(req.stop)
    parser = _parser(req)
    choice = StreamedChoice(shape, parser)
    scores, kept = LogprobBuffer(req, stream.backend), _kept_tokens(stream, req)
    stats: GenerationStats | None = None
    async for event in stream.events():
        if isinstance(event, TextChunk):
            for body in scores.attach(choice.feed(_feed(stops, kept, scores, event))):
                yield body
            if stops.stopped:
                stream.cancel()
        elif isinstance(event, Finished):
            stats = event.stats
        elif isinstance(event, Failed):
            yield _engine_error(event).body()
            return
    tail = stops.flush()
    scores.add(kept.finish())
    ending = (choice.feed(tail) if tail else []) + choice.finish(_cut(stats, stops))
    reason = finish_reason(stats, stops.stopped, choice.called_tools, bool(parser and parser.cut))
    ending.append(shape.chunk(None, reason))
    for body in scores.attach(ending):
        yield body
    if req.include_usage:
        yield shape.usage_chunk(usage(prompt_tokens, stats, kept.count))


def _parser(req: ApiRequest) -> ToolCallParser | None:
    """The tool-call reader of a chat with tools (one call at most for parallel_tool_calls false)."""
    if not req.parses_tools:
        return None
    return ToolCallParser(req.tools, max_calls=None if req.parallel_tool_calls else 1)


def _cut(stats: GenerationStats | None, stops: StopMatcher) -> bool:
    """Whether max_tokens ended the reply (not a stop sequence, not the end of the turn)."""
    return not stops.stopped and stats is not None and stats.stop_reason == StopReason.LENGTH


def _kept_tokens(stream: JobStream, req: ApiRequest) -> KeptTokens:
    return KeptTokens(stream.backend.engine.tokenizer.decode, bool(req.stop))


def _feed(stops: StopMatcher, kept: KeptTokens, scores: LogprobBuffer, chunk: TextChunk) -> str:
    """A chunk's text that may be sent (cut at a stop sequence); the logprobs of the tokens behind it."""
    was_stopped = stops.stopped
    sent = stops.feed(chunk.text)
    if not was_stopped:
        scores.add(kept.add(chunk, sent))
        if stops.stopped:
            kept.stop()
    return sent


class LogprobBuffer:
    """The target's logprobs of the tokens behind the text, in OpenAI's shape: whole, or on the chunk that
    carries their text (a chunk held back by a stop sequence or a tool call passes them to the next one)."""

    def __init__(self, req: ApiRequest, backend: EngineBackend):
        self.kind, self.on = req.kind, req.cfg.logprobs is not None
        self.backend = backend
        self.pending: list[TokenLogprob] = []
        self.sent_chars = 0  # legacy completions give text offsets

    def add(self, scores: list[TokenLogprob]) -> None:
        """The logprobs of tokens whose text is sent (or about to be)."""
        if self.on:
            self.pending.extend(scores)

    def take(self) -> JSONObject | None:
        """Every token so far, formatted (None when the request did not ask)."""
        if not self.on:
            return None
        tokenizer = self.backend.engine.tokenizer
        scores, self.pending = self.pending, []
        if self.kind == "chat":
            return chat_logprobs(scores, tokenizer)
        body = completion_logprobs(scores, tokenizer, self.sent_chars)
        self.sent_chars = text_end(
            scores, tokenizer, self.sent_chars
        )  # not the token strings: 'bytes:\xNN' is one byte
        return body

    def attach(self, bodies: list[JSONObject]) -> list[JSONObject]:
        """The chunks, the first that has a choice carrying the tokens waiting so far."""
        if self.on and self.pending:
            for body in bodies:
                choices = objects(body.get("choices"))  # the body's own dicts: the first one is changed in place
                if choices and not _role_only(choices[0]):
                    choices[0]["logprobs"] = self.take()
                    break
        return bodies


def _role_only(choice: JSONObject) -> bool:
    """The first chunk of a chat stream: the role with empty content (no tokens behind it)."""
    return choice.get("delta") == {"role": "assistant", "content": ""}


def _data(body: JSONObject) -> dict[str, str]:
    return {"data": json.dumps(body)}


def _engine_error(event: Failed) -> ApiError:
    """A failed generation: a bad setting is the client's (400), anything else the server's (500)."""
    if event.kind is ErrorKind.CONFIG:
        return ApiError(400, event.message)
    if event.kind is ErrorKind.SHUTDOWN:
        return shutting_down()
    return ApiError(500, event.message, "server_error")
