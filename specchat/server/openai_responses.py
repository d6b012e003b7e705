"""POST /v1/responses (OpenAI's Responses API) on the same engine queue as the chat route: the request is
translated to an OpenAI chat (openai_responses_wire.py), its chunks to Responses events
(openai_responses_events.py); each response's conversation is kept in memory for previous_response_id."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, replace
from typing import cast

from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from specchat.engine.config import GenerationConfig
from specchat.engine.json_types import JSONObject, as_object, as_str

from .anthropic_stream import sse
from .backend import EngineBackend
from .errors import ApiError
from .openai_responses_events import ResponsesEvents, assistant_message
from .openai_responses_wire import ResponsesRequest, read_request, renamed
from .requests import ApiRequest, parse_request
from .streaming import JobStream, openai_chunks

KEPT_RESPONSES = 1000


@dataclass(frozen=True)
class _Kept:
    """One kept response: the messages it added to its previous response's conversation."""

    parent: _Kept | None
    messages: tuple[JSONObject, ...]
    length: int  # the messages of the whole conversation up to here

    def conversation(self) -> list[JSONObject]:
        """The whole conversation, oldest message first."""
        parts: list[tuple[JSONObject, ...]] = []
        node: _Kept | None = self
        while node is not None:
            parts.append(node.messages)
            node = node.parent
        return [message for part in reversed(parts) for message in part]


class ResponseStore:
    """The conversations (chat messages, instructions left out) of the newest responses, by response id.

    Each keeps only what it added to the one it continues, so an agent's long chain of follow-ups costs
    its messages once, not once per response."""

    def __init__(self, size: int = KEPT_RESPONSES):
        self.size = size
        self._kept: OrderedDict[str, _Kept] = OrderedDict()

    def get(self, response_id: str) -> list[JSONObject] | None:
        """The conversation up to and including that response, or None when it is not kept."""
        kept = self._kept.get(response_id)
        return kept.conversation() if kept is not None else None

    def put(self, response_id: str, conversation: list[JSONObject], previous_id: str | None = None) -> None:
        """Keep a conversation that continues `previous_id`'s, forgetting the oldest beyond the size."""
        parent = self._kept.get(previous_id) if previous_id else None
        if parent is not None and parent.length <= len(conversation):
            added = tuple(conversation[parent.length :])
        else:
            parent, added = None, tuple(conversation)
        self._kept[response_id] = _Kept(parent, added, len(conversation))
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)


def response_store(request: Request) -> ResponseStore:
    """The app's store, made on first use (it lives as long as the server)."""
    store = getattr(request.app.state, "responses_store", None)
    if not isinstance(store, ResponseStore):
        store = request.app.state.responses_store = ResponseStore()
    return store


async def create_response(
    request: Request, body: object, backend: EngineBackend, defaults: GenerationConfig
) -> Response:
    """A Responses request, streamed as typed events or answered whole; errors in OpenAI's shape."""
    store = response_store(request)
    read = read_request(body, store.get)
    try:
        req = parse_request("chat", read.chat, backend.models(), defaults)
        ids = backend.prompt_ids(req)
    except ApiError as error:
        raise renamed(error) from None
    stream = JobStream(backend, request)
    await stream.start(ids, req.cfg)
    events = ResponsesEvents(req.model, read.echo, single_call=not read.parallel_tool_calls)
    run = _Run(stream, replace(req, include_usage=True), len(ids), events, read, store)
    if req.stream:
        return EventSourceResponse(_sse(run), ping=10)
    return JSONResponse(await _whole(run))


class _Run:
    """One response's job and what turns its chunks into events and keeps its conversation."""

    def __init__(
        self,
        stream: JobStream,
        req: ApiRequest,
        prompt_tokens: int,
        events: ResponsesEvents,
        read: ResponsesRequest,
        store: ResponseStore,
    ):
        self.stream, self.req, self.prompt_tokens = stream, req, prompt_tokens
        self.events, self.read, self.store = events, read, store
        self.failure: JSONObject | None = None  # the chat error object that ended the job

    def keep(self) -> None:
        """Keep the conversation for a follow-up, unless the request said store false."""
        if self.read.store:
            conversation = [*self.read.history, assistant_message(self.events.output)]
            previous = as_str(self.read.echo.get("previous_response_id")) or None
            self.store.put(as_str(self.events.response["id"]), conversation, previous)


async def _events(run: _Run) -> AsyncIterator[JSONObject]:
    """The Responses events for the job's chat chunks; an engine error ends them with an error event."""
    for event in run.events.start():
        yield event
    chunks = cast(AsyncGenerator[JSONObject, None], openai_chunks(run.stream, run.req, run.prompt_tokens))
    try:
        async for chunk in chunks:
            if "error" in chunk:
                run.failure = as_object(chunk["error"])
                yield run.events.error(run.failure)
                return
            for event in run.events.chunk(chunk):
                yield event
    finally:
        await chunks.aclose()
    ending = run.events.finish()
    run.keep()
    for event in ending:
        yield event


async def _sse(run: _Run) -> AsyncIterator[dict[str, str]]:
    async for event in _events(run):
        yield sse(as_str(event["type"]), event)


async def _whole(run: _Run) -> JSONObject:
    """The whole response: the one the last event carries."""
    final: JSONObject = {}
    async for event in _events(run):
        if run.failure is not None:
            raise _error(run.failure)
        final = event
    return as_object(final["response"])


def _error(error: JSONObject) -> ApiError:
    """The chat error object that ended a job as the HTTP error a whole request gets."""
    kind, code = str(error.get("type", "server_error")), as_str(error.get("code")) or None
    status = 503 if code == "server_shutting_down" else 400 if kind == "invalid_request_error" else 500
    return ApiError(status, str(error.get("message", "")), kind, as_str(error.get("param")) or None, code)
