"""Ollama's API (/api/chat, /api/generate, /api/tags, /api/show, /api/ps, /api/version) on the same engine
queue as the OpenAI routes: a request is translated to an OpenAI chat or completion, its chunks back to Ollama's
NDJSON lines. Every error, the key check's included, comes in Ollama's shape: {"error": "message"}."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import asdict, replace
from typing import cast

from fastapi import APIRouter, Request
from fastapi.routing import APIRoute
from starlette.responses import JSONResponse, Response, StreamingResponse

from specchat.engine.config import GenerationConfig
from specchat.engine.json_types import JSONObject, as_int, as_object, as_str

from .backend import NOT_LOADED, EngineBackend
from .errors import ApiError, bad_request
from .ollama_models import OLLAMA_API_VERSION, TAG, listed, model_name, not_found_error, running, shown
from .ollama_options import Served
from .ollama_reply import OPEN, OllamaReply, ThinkSplitter, created_at, whole
from .ollama_wire import chat_body, generate_body
from .requests import ApiRequest, parse_request
from .streaming import JobStream, openai_chunks

BodyReader = Callable[[Request, int], Awaitable[object]]
NDJSON = "application/x-ndjson"
DEFAULT_SHOWN = ("temperature", "top_p", "top_k", "min_p", "max_tokens")


def ollama_error(error: ApiError) -> JSONResponse:
    """An ApiError as Ollama's error response."""
    return JSONResponse({"error": error.message}, status_code=error.status, headers=error.headers)


class OllamaRoute(APIRoute):
    """A route whose ApiErrors (its dependencies' too: the API key) answer in Ollama's shape."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[object, object, Response]]:
        """The route's handler, its ApiErrors turned into Ollama's error bodies."""
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(request)
            except ApiError as error:
                return ollama_error(error)

        return route


def ollama_router(read_body: BodyReader) -> APIRouter:
    """The Ollama routes, reading bodies with the app's reader (size, depth and text checks)."""
    router = APIRouter(route_class=OllamaRoute)

    # response_model=None: the bodies are JSON as built (see app.py: FastAPI cannot model the JSONObject alias)
    @router.get("/api/version", response_model=None)
    async def version() -> JSONObject:
        """The Ollama API version these routes follow."""
        return {"version": OLLAMA_API_VERSION}

    @router.get("/api/tags", response_model=None)
    async def tags(request: Request) -> JSONObject:
        """The loaded model as Ollama lists models."""
        engine = _backend(request).loaded()
        return {"models": [listed(engine)] if engine is not None else []}

    @router.get("/api/ps", response_model=None)
    async def ps(request: Request) -> JSONObject:
        """The loaded model as Ollama lists running ones."""
        engine = _backend(request).loaded()
        return {"models": [running(engine)] if engine is not None else []}

    @router.post("/api/show", response_model=None)
    async def show(request: Request) -> JSONObject:
        """The model's details, model_info, template and default parameters."""
        backend, body = _backend(request), await _body(request, read_body)
        _model(body.get("model", body.get("name")), backend)
        defaults = asdict(_defaults(request))
        return shown(backend.engine, {k: defaults[k] for k in DEFAULT_SHOWN})

    @router.post("/api/chat")
    async def chat(request: Request) -> Response:
        """A chat, streamed as NDJSON lines (Ollama's default) or whole."""
        return await _generate(request, read_body, "chat")

    @router.post("/api/generate")
    async def generate(request: Request) -> Response:
        """A prompt (through the chat template unless raw), streamed as NDJSON lines or whole."""
        return await _generate(request, read_body, "generate")

    return router


def _backend(request: Request) -> EngineBackend:
    backend: EngineBackend = request.app.state.backend
    return backend


def _defaults(request: Request) -> GenerationConfig:
    defaults: GenerationConfig = request.app.state.options.defaults
    return defaults


async def _body(request: Request, read_body: BodyReader) -> JSONObject:
    body = await read_body(request, request.app.state.options.max_body_bytes)
    if not isinstance(body, dict):
        raise bad_request("The request body must be a JSON object")
    return body


def _model(name: object, backend: EngineBackend) -> str:
    """The served model's id for a name (with or without :latest); 404 for any other."""
    models = backend.models()
    if not models:
        raise ApiError(503, NOT_LOADED, "server_error", None, "model_not_loaded")
    if name is None or name == "":
        return models[0]
    plain = name.removesuffix(TAG) if isinstance(name, str) else name
    if plain not in models:
        raise not_found_error(name, ", ".join(m + TAG for m in models))
    return str(plain)


def _served(backend: EngineBackend) -> Served:
    engine = backend.engine
    template = getattr(engine.tokenizer, "chat_template", None)
    window = engine.context_window()
    switch = "enable_thinking" in template if isinstance(template, str) else None
    return Served(switch, window[0] if window else None)


async def _generate(request: Request, read_body: BodyReader, route: str) -> Response:
    started = time.monotonic_ns()
    backend, body = _backend(request), await _body(request, read_body)
    model = _model(body.get("model"), backend)
    shown_name = as_str(body.get("model")) or model_name(backend.engine)
    body = {**body, "model": model}
    if _loads_only(body, route):
        return JSONResponse(_loaded(route, shown_name))
    if route == "chat":
        kind, openai = "chat", chat_body(body, _served(backend))
    else:
        kind, openai = generate_body(body, _served(backend))
    req = parse_request(kind, openai, backend.models(), _defaults(request))
    ids = backend.prompt_ids(req)
    stream = JobStream(backend, request)
    await stream.start(ids, req.cfg)
    reply = OllamaReply(route, shown_name, len(ids), started, _splitter(req, backend, ids))
    lines = _lines(stream, replace(req, stream=True, include_usage=True), len(ids), reply)
    if req.stream:
        return StreamingResponse(_ndjson(lines), media_type=NDJSON)
    return JSONResponse(whole([line async for line in _raising(lines)]))


def _splitter(req: ApiRequest, backend: EngineBackend, ids: list[int]) -> ThinkSplitter | None:
    """A splitter of the thinking when the request asked to think (opened when the prompt opened the block)."""
    if req.template_kwargs.get("enable_thinking") is not True:
        return None
    tail = backend.engine.tokenizer.decode(ids[-4:])
    return ThinkSplitter(opened=tail.rstrip().endswith(OPEN))


def _loads_only(body: JSONObject, route: str) -> bool:
    """Ollama's way to load a model: a chat without messages, a generate without a prompt."""
    return not body.get("messages") if route == "chat" else not body.get("prompt") and not body.get("context")


def _loaded(route: str, model: str) -> JSONObject:
    body: JSONObject = {"model": model, "created_at": created_at()}
    body.update({"message": {"role": "assistant", "content": ""}} if route == "chat" else {"response": ""})
    return {**body, "done": True, "done_reason": "load"}


async def _lines(
    stream: JobStream, req: ApiRequest, prompt_tokens: int, reply: OllamaReply
) -> AsyncIterator[JSONObject]:
    """Ollama's lines for the job's OpenAI chunks; an engine error ends them with an {"error"} line."""
    chunks = cast(AsyncGenerator[JSONObject, None], openai_chunks(stream, req, prompt_tokens))
    try:
        async for chunk in chunks:
            if "error" in chunk:
                error = as_object(chunk["error"])
                yield {"error": error.get("message", ""), "_status": _status(error)}
                return
            for line in reply.chunk(chunk):
                yield line
    finally:
        await chunks.aclose()
    for line in reply.finish():
        yield line


def _status(error: JSONObject) -> int:
    if error.get("type") == "invalid_request_error":
        return 400
    return 503 if error.get("code") == "server_shutting_down" else 500


async def _raising(lines: AsyncIterator[JSONObject]) -> AsyncIterator[JSONObject]:
    """The lines, an error line raised as the ApiError it stands for (a whole reply has no lines to end)."""
    async for line in lines:
        if "error" in line:
            raise ApiError(as_int(line["_status"], 500), as_str(line["error"]))
        yield line


async def _ndjson(lines: AsyncIterator[JSONObject]) -> AsyncIterator[bytes]:
    async for line in lines:
        line.pop("_status", None)
        yield json.dumps(line).encode() + b"\n"
