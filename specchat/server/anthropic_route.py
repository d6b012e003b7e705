"""POST /v1/messages (Anthropic's Messages API) and /v1/messages/count_tokens, on the same engine queue
as the OpenAI routes: the request is translated to an OpenAI chat, its chunks back to Anthropic events."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import replace
from typing import cast

from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from specchat.engine.config import GenerationConfig
from specchat.engine.json_types import JSONObject, as_int, as_object, as_str

from .anthropic_stream import AnthropicEvents, sse
from .anthropic_wire import error_body, openai_body
from .backend import EngineBackend
from .errors import ApiError, bad_request
from .requests import ApiRequest, parse_request
from .streaming import JobStream, openai_chunks


async def anthropic_messages(
    request: Request, body: object, backend: EngineBackend, defaults: GenerationConfig
) -> Response:
    """A Messages request, streamed as Anthropic's events or answered whole; errors in Anthropic's shape."""
    try:
        req = _request(body, backend, defaults)
        ids = backend.prompt_ids(req)
        stream = JobStream(backend, request)
        await stream.start(ids, req.cfg)
    except ApiError as error:
        return anthropic_error(error)
    events = AnthropicEvents(req.model, len(ids), req.stop)
    chat = replace(req, stop=(), include_usage=True)  # stop sequences are cut here: Anthropic names the one hit
    if req.stream:
        return EventSourceResponse(_sse(stream, chat, len(ids), events), ping=10)
    try:
        return JSONResponse(await _whole(stream, chat, len(ids), events))
    except ApiError as error:
        return anthropic_error(error)


def count_tokens(body: object, backend: EngineBackend, defaults: GenerationConfig) -> Response:
    """The prompt's token count for a Messages request (max_tokens may be left out)."""
    if isinstance(body, dict) and "max_tokens" not in body:
        body = {**body, "max_tokens": 1}
    try:
        req = _request(body, backend, defaults)
        return JSONResponse({"input_tokens": len(backend.prompt_ids(req))})
    except ApiError as error:
        return anthropic_error(error)


def anthropic_error(error: ApiError) -> JSONResponse:
    """An ApiError as Anthropic's error response."""
    return JSONResponse(error_body(error), status_code=error.status, headers=error.headers)


def _request(body: object, backend: EngineBackend, defaults: GenerationConfig) -> ApiRequest:
    req = parse_request("chat", openai_body(body), backend.models(), defaults)
    if isinstance(body, dict) and body.get("thinking") is not None:
        _check_thinking_switch(req, backend)
    return req


def _check_thinking_switch(req: ApiRequest, backend: EngineBackend) -> None:
    """400 naming thinking when the chat template renders the same prompt with enable_thinking on and off."""
    switched = {**req.template_kwargs, "enable_thinking": not req.template_kwargs["enable_thinking"]}
    if backend.prompt_ids(req) == backend.prompt_ids(replace(req, template_kwargs=switched)):
        raise bad_request(
            "thinking is not supported by this model: its chat template has no enable_thinking switch",
            "thinking",
            "unsupported_parameter",
        )


async def _events(
    stream: JobStream, req: ApiRequest, prompt_tokens: int, events: AnthropicEvents
) -> AsyncIterator[tuple[str, JSONObject]]:
    """Anthropic's events for the job's OpenAI chunks; an engine error ends the stream with an error event."""
    for event in events.start():
        yield event
    chunks = cast(AsyncGenerator[JSONObject, None], openai_chunks(stream, req, prompt_tokens))
    try:
        async for chunk in chunks:
            if "error" in chunk:
                message = as_str(as_object(chunk["error"]).get("message"))
                yield "error", {"type": "error", "error": {"type": "api_error", "message": message}}
                return
            for event in events.chunk(chunk):
                yield event
            if events.stopped:
                stream.cancel()  # a stop sequence: the rest is not wanted (usage still arrives)
    finally:
        await chunks.aclose()
    for event in events.finish():
        yield event


async def _sse(
    stream: JobStream, req: ApiRequest, prompt_tokens: int, events: AnthropicEvents
) -> AsyncIterator[dict[str, str]]:
    async for name, data in _events(stream, req, prompt_tokens, events):
        yield sse(name, data)


async def _whole(stream: JobStream, req: ApiRequest, prompt_tokens: int, events: AnthropicEvents) -> JSONObject:
    """The whole message, assembled from the same events the stream would send."""
    message: JSONObject = {}
    blocks: list[JSONObject] = []
    partial: dict[int, str] = {}
    async for name, data in _events(stream, req, prompt_tokens, events):
        if name == "error":
            raise ApiError(500, as_str(as_object(data["error"]).get("message")), "server_error")
        if name == "message_start":
            message = as_object(data["message"])
        elif name == "content_block_start":
            blocks.append(dict(as_object(data["content_block"])))
        elif name == "content_block_delta":
            index = as_int(data["index"])
            _add_delta(blocks[index], as_object(data["delta"]), partial, index)
        elif name == "message_delta":
            message.update(as_object(data["delta"]))
            message["usage"] = {**as_object(message.get("usage")), **as_object(data["usage"])}
    for index, text in partial.items():
        blocks[index]["input"] = json.loads(text or "{}")
    return {**message, "content": blocks}


def _add_delta(block: JSONObject, delta: JSONObject, partial: dict[int, str], index: int) -> None:
    if delta["type"] == "text_delta":
        block["text"] = as_str(block.get("text")) + as_str(delta["text"])
    else:
        partial[index] = partial.get(index, "") + as_str(delta["partial_json"])
