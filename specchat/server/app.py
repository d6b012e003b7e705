"""The ASGI app: OpenAI's /v1 routes and SpecChat's own event stream, over one engine host."""

from __future__ import annotations

import hmac
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, fields, replace

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from sse_starlette.sse import EventSourceResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response

from specchat.engine.config import GenerationConfig
from specchat.engine.errors import ConfigError
from specchat.engine.json_types import JSONObject

from .anthropic_route import anthropic_error, anthropic_messages, count_tokens
from .backend import EngineBackend, template_errors
from .errors import ApiError, bad_request, unauthorized
from .ollama_route import ollama_router
from .openai_responses import create_response
from .request_log import RequestLog
from .request_trace import RequestLogMiddleware
from .requests import ApiRequest, parse_request
from .streaming import JobStream, openai_sse, openai_whole
from .wire import event_to_json

MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_JSON_DEPTH = 64  # no request shape nests nearly this deep; the checks below walk it recursively


@dataclass
class ServerOptions:
    """What `serve` was started with: defaults for requests, the key, CORS and limits."""

    defaults: GenerationConfig = field(default_factory=GenerationConfig)
    api_key: str | None = None
    cors_origins: tuple[str, ...] = ()
    max_body_bytes: int = MAX_BODY_BYTES
    request_log: RequestLog = field(default_factory=RequestLog)  # every request's record (the app reads it)


def create_app(backend: EngineBackend, options: ServerOptions) -> FastAPI:
    """The FastAPI app serving `backend` with `options`."""
    api = FastAPI(title="SpecChat", docs_url=None, redoc_url=None, openapi_url=None)
    if options.cors_origins:
        api.add_middleware(
            CORSMiddleware, allow_origins=list(options.cors_origins), allow_methods=["*"], allow_headers=["*"]
        )
    api.add_middleware(RequestLogMiddleware, backend=backend, log=options.request_log)  # outside CORS and every route
    api.state.backend, api.state.options = backend, options
    api.add_exception_handler(ApiError, _api_error)
    api.add_exception_handler(StarletteHTTPException, _http_error)
    api.include_router(routes)
    api.include_router(ollama_router(_json_body), dependencies=[Depends(_check_key)])  # errors in its shape
    return api


def _backend(request: Request) -> EngineBackend:
    backend: EngineBackend = request.app.state.backend  # Starlette's app.state holds Any
    return backend


def _options(request: Request) -> ServerOptions:
    options: ServerOptions = request.app.state.options
    return options


async def _api_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


async def _http_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    return JSONResponse(ApiError(exc.status_code, str(exc.detail)).body(), status_code=exc.status_code)


async def _check_key(request: Request) -> None:
    """401 unless the request carries the server's key (when it has one).

    A route dependency, not an HTTP middleware: Starlette's BaseHTTPMiddleware wraps `receive`, and a
    route behind it never sees the client hang up (request.is_disconnected() stays False), so an
    abandoned request went on reading its prompt for minutes.
    """
    key = _options(request).api_key
    if key and not _key_matches(request, key):
        raise unauthorized()


routes = APIRouter(dependencies=[Depends(_check_key)])


# response_model=None on routes that return a JSONObject: FastAPI would build a pydantic model of that annotation
# (a recursive alias it cannot resolve); the body is JSON already and is sent as built.
@routes.get("/v1/models", response_model=None)
async def list_models(request: Request) -> JSONObject:
    """OpenAI's model list: the loaded target."""
    created = int(time.time())
    return {
        "object": "list",
        "data": [
            {"id": m, "object": "model", "created": created, "owned_by": "specchat"} for m in _backend(request).models()
        ],
    }


@routes.post("/v1/chat/completions")
async def chat_completions(request: Request) -> Response:
    """OpenAI's chat completions, streamed or whole."""
    return await _openai(request, "chat")


@routes.post("/v1/completions")
async def completions(request: Request) -> Response:
    """OpenAI's legacy completions, streamed or whole."""
    return await _openai(request, "completion")


@routes.post("/v1/messages")
async def messages(request: Request) -> Response:
    """Anthropic's Messages API, streamed or whole, on the same queue."""
    backend, options = _backend(request), _options(request)
    try:
        body = await _json_body(request, options.max_body_bytes)
    except ApiError as error:
        return anthropic_error(error)
    return await anthropic_messages(request, body, backend, options.defaults)


@routes.post("/v1/messages/count_tokens")
async def messages_count_tokens(request: Request) -> Response:
    """The prompt's token count for an Anthropic Messages request."""
    backend, options = _backend(request), _options(request)
    try:
        body = await _json_body(request, options.max_body_bytes)
    except ApiError as error:
        return anthropic_error(error)
    return count_tokens(body, backend, options.defaults)


@routes.post("/v1/responses")
async def responses(request: Request) -> Response:
    """OpenAI's Responses API, streamed or whole, on the same queue."""
    backend, options = _backend(request), _options(request)
    body = await _json_body(request, options.max_body_bytes)
    return await create_response(request, body, backend, options.defaults)


@routes.post("/specchat/v1/generate")
async def generate(request: Request) -> EventSourceResponse:
    """SpecChat's own stream: every engine event (rounds, rejections, stats) as JSON."""
    backend, options = _backend(request), _options(request)
    body = await _json_body(request, options.max_body_bytes)
    req, system_prompt, thinking = _specchat_request(body, backend, options.defaults)
    ids = backend.prompt_ids(req, system_prompt, thinking, ids_param="prompt_ids")
    stream = JobStream(backend, request)
    await stream.start(ids, req.cfg)
    return EventSourceResponse(_event_stream(stream), ping=10)


@routes.post("/specchat/v1/tokenize", response_model=None)
async def tokenize(request: Request) -> JSONObject:
    """Token ids of a text or of messages through the chat template."""
    body = await _json_body(request, _options(request).max_body_bytes)
    return {"ids": _tokenize(_backend(request), body)}


@routes.post("/specchat/v1/decode", response_model=None)
async def decode(request: Request) -> JSONObject:
    """The text of token ids."""
    body = await _json_body(request, _options(request).max_body_bytes)
    ids = body.get("ids") if isinstance(body, dict) else None
    if not isinstance(ids, list):
        raise bad_request("ids must be a list of token ids", "ids")
    backend = _backend(request)
    backend.check_ids(ids, "ids")
    return {"text": backend.engine.tokenizer.decode(ids)}


@routes.get("/specchat/v1/status", response_model=None)
async def status(request: Request) -> dict[str, object]:  # JSON: extra_status's fields are objects
    """What is loaded, what runs and waits, and how many requests were served."""
    backend = _backend(request)
    engine = backend.loaded()
    state = backend.host.state()
    return {
        "models": backend.models(),
        "loaded": engine is not None,
        "target": engine.target.name if engine else None,
        "draft": engine.draft.name if engine and engine.draft else None,
        "available_modes": engine.available_modes() if engine else {},
        "running": state.running.kind if state.running else None,
        "running_batch": [j.kind for j in state.running_batch],
        "queued": [j.kind for j in state.queued],
        "requests_served": backend.requests_served,
        **backend.extra_status(),
    }


async def _openai(request: Request, kind: str) -> Response:
    backend, options = _backend(request), _options(request)
    body = await _json_body(request, options.max_body_bytes)
    req = parse_request(kind, body, backend.models(), options.defaults)
    ids = backend.prompt_ids(req)
    stream = JobStream(backend, request)
    await stream.start(ids, req.cfg)
    if req.stream:
        return EventSourceResponse(openai_sse(stream, req, len(ids)), ping=10)
    return JSONResponse(await openai_whole(stream, req, len(ids)))


async def _event_stream(stream: JobStream) -> AsyncIterator[dict[str, str]]:
    async for event in stream.events(include_queue=True):
        yield {"data": json.dumps(event if isinstance(event, dict) else event_to_json(event))}


def _key_matches(request: Request, key: str) -> bool:
    header = request.headers.get("authorization", "")
    given = header[7:] if header.lower().startswith("bearer ") else request.headers.get("x-api-key", "")
    return hmac.compare_digest(given.encode(), key.encode())


async def _json_body(request: Request, limit: int) -> object:
    """The request's JSON; 413 over the size limit, 400 when it is not JSON."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise ApiError(413, f"The request body is {int(length)} bytes; the limit is {limit}")
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            raise ApiError(413, f"The request body is over the limit of {limit} bytes")
    try:
        body = json.loads(bytes(data) or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request(f"The request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise bad_request("The request body nests too deeply to read") from None
    if _depth_over(body, MAX_JSON_DEPTH):
        raise bad_request(f"The request body nests more than {MAX_JSON_DEPTH} levels deep") from None
    where = lone_surrogate_at(body)
    if where is not None:
        raise bad_request(
            f"{where} holds a lone UTF-16 surrogate (an escape like \\ud800 without its pair): it is not text", where
        )
    return body


def _depth_over(value: object, limit: int) -> bool:
    """Whether parsed JSON nests deeper than `limit` (walked without recursion)."""
    level: list[object] = [value]
    for _ in range(limit + 1):
        level = [
            child
            for item in level
            if isinstance(item, (dict, list))
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        if not level:
            return False
    return True


def lone_surrogate_at(value: object, where: str = "body") -> str | None:
    """The path of the first string in parsed JSON that cannot be UTF-8 (a lone surrogate), or None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where
        return None
    items: list[tuple[str, object]] = []
    if isinstance(value, dict):
        items = [(f"{where}.{key}" if where != "body" else str(key), item) for key, item in value.items()]
        items += [(f"{where} key", key) for key in value]
    elif isinstance(value, list):
        items = [(f"{where}[{i}]", item) for i, item in enumerate(value)]
    for path, item in items:
        found = lone_surrogate_at(item, path)
        if found is not None:
            return found
    return None


def _tokenize(backend: EngineBackend, body: object) -> list[int]:
    """Token ids of {"text"} (encoded as is) or {"messages", "template_kwargs"} (the chat template)."""
    if not isinstance(body, dict):
        raise bad_request("The request body must be a JSON object")
    tokenizer = backend.engine.tokenizer
    if isinstance(body.get("text"), str):
        return list(tokenizer.encode(body["text"]))
    req = parse_request("chat", {"messages": body.get("messages")}, backend.models(), GenerationConfig())
    kwargs = body.get("template_kwargs") or {}
    if not isinstance(kwargs, dict):
        raise bad_request("template_kwargs must be an object", "template_kwargs")
    opening = body.get("add_generation_prompt", True)
    if not isinstance(opening, bool):
        raise bad_request("add_generation_prompt must be true or false", "add_generation_prompt")
    with template_errors():  # the tokenizer's own method (a RemoteTokenizer's), so no prefill continuation here
        ids = tokenizer.apply_chat_template(list(req.messages), add_generation_prompt=opening, **kwargs)
    return [int(t) for t in ids]


def _specchat_request(
    body: object, backend: EngineBackend, defaults: GenerationConfig
) -> tuple[ApiRequest, str, bool | None]:
    """SpecChat's own request: messages (or prompt_ids), a config dict, system prompt and thinking."""
    if not isinstance(body, dict):
        raise bad_request("The request body must be a JSON object")
    config = body.get("config") or {}
    known = {f.name for f in fields(GenerationConfig)}
    unknown = sorted(set(config) - known) if isinstance(config, dict) else ["config"]
    if unknown:
        raise bad_request(f"config has unknown fields: {', '.join(unknown)}", "config")
    try:
        cfg = replace(defaults, **config)
    except (ConfigError, TypeError, OverflowError) as exc:  # OverflowError: an integer too large for the limits
        raise bad_request(str(exc), "config") from None
    if "prompt_ids" in body:
        ids = body["prompt_ids"]
        if not isinstance(ids, list) or not ids:
            raise bad_request("prompt_ids must be a non-empty list of token ids", "prompt_ids")
        backend.check_ids(ids, "prompt_ids")
        req = ApiRequest("completion", backend.models()[0] if backend.models() else "", cfg, prompt=tuple(ids))
    else:
        req = parse_request("chat", {"messages": body.get("messages")}, backend.models(), cfg)
    thinking = body.get("enable_thinking")
    return req, str(body.get("system_prompt") or ""), thinking if isinstance(thinking, bool) else None
