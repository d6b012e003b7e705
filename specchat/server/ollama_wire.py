"""Ollama's /api/chat and /api/generate requests in terms of the OpenAI chat the server already speaks: the
body becomes an OpenAI chat (or completion) body that parse_request checks. Pure functions over JSON; the
route is in ollama_route.py, the replies in ollama_reply.py."""

from __future__ import annotations

import json

from specchat.engine.json_types import JSONObject

from .errors import bad_request
from .ollama_options import Served, openai_options
from .tools import new_call_id

PASSED = ("model", "speculation")  # fields that mean the same in both APIs


def chat_body(body: JSONObject, served: Served) -> JSONObject:
    """The OpenAI chat body for an Ollama /api/chat request; 400 naming the field that is wrong."""
    out = _common(body, served)
    out["messages"] = messages(body.get("messages"))
    if body.get("tools"):
        if not isinstance(body["tools"], list):
            raise bad_request("tools must be a list of {type: function, function: {...}}", "tools")
        out["tools"] = body["tools"]
    return out


def generate_body(body: JSONObject, served: Served) -> tuple[str, JSONObject]:
    """The kind ("chat" through the template, "completion" when raw) and OpenAI body of an /api/generate."""
    for name in ("template", "suffix"):
        if body.get(name):
            raise bad_request(f"{name} is not supported by this server: the model's own chat template applies", name)
    if body.get("context"):
        raise bad_request("context is not supported by this server: send the conversation to /api/chat", "context")
    _no_images(body, "images")
    prompt = body.get("prompt")
    if not isinstance(prompt, str):
        raise bad_request("prompt must be a string", "prompt")
    out = _common(body, served)
    raw = body.get("raw", False)
    if not isinstance(raw, bool):
        raise bad_request(f"raw must be true or false, got {raw!r}", "raw")
    if raw:
        out.pop("chat_template_kwargs", None)
        return "completion", {**out, "prompt": prompt}
    system = body.get("system")
    if system is not None and not isinstance(system, str):
        raise bad_request("system must be a string", "system")
    chat = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    return "chat", {**out, "messages": chat}


def _common(body: JSONObject, served: Served) -> JSONObject:
    """What chat and generate share: model, stream (default true), options, format, think, logprobs."""
    out: JSONObject = {name: body[name] for name in PASSED if name in body}
    stream = body.get("stream", True)
    if stream is None:
        stream = True
    if not isinstance(stream, bool):
        raise bad_request(f"stream must be true or false, got {stream!r}", "stream")
    out["stream"] = stream
    if body.get("logprobs") or body.get("top_logprobs"):
        raise bad_request("logprobs is not supported on the Ollama routes: use /v1/chat/completions", "logprobs")
    out.update(openai_options(body.get("options"), served))
    fmt = response_format(body.get("format"))
    if fmt is not None:
        out["response_format"] = fmt
    enable = think_switch(body.get("think"), served.thinking_switch)
    if enable is not None:
        out["chat_template_kwargs"] = {"enable_thinking": enable}
    return out


def response_format(fmt: object) -> JSONObject | None:
    """OpenAI's response_format for Ollama's format: "json" (any JSON object) or a JSON schema."""
    if fmt is None or fmt == "":
        return None
    if fmt == "json":
        return {"type": "json_object"}
    if isinstance(fmt, dict):
        return {"type": "json_schema", "json_schema": {"name": "format", "schema": fmt}}
    raise bad_request(f'format must be "json" or a JSON schema object, got {fmt!r}', "format")


def think_switch(think: object, switch: bool | None) -> bool | None:
    """The template's enable_thinking for Ollama's think (None: leave the template's default). switch says whether
    the chat template has the switch (None: unknown, passed on); thinking asked of a template without it is a 400."""
    if think is None:
        return None
    if not isinstance(think, bool):
        raise bad_request(f"think must be true or false on this server, got {think!r}", "think")
    if switch is False:
        if think:
            raise bad_request("think is not supported by this model: its chat template has no thinking switch", "think")
        return None
    return think


def messages(items: object) -> list[JSONObject]:
    """Ollama's messages as OpenAI's: tool calls get ids (arguments as JSON text), tool results the id they answer."""
    if not isinstance(items, list) or not items:
        raise bad_request("messages must be a non-empty list of {role, content}", "messages")
    out: list[JSONObject] = []
    pending: list[tuple[str, str]] = []  # (id, function name) of calls not answered yet
    for i, message in enumerate(items):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise bad_request(f"{where} must be an object with a role and content", where)
        _no_images(message, f"{where}.images")
        entry = {key: message[key] for key in ("role", "content") if key in message}
        if message.get("role") == "assistant" and message.get("tool_calls"):
            entry["tool_calls"] = _calls(message["tool_calls"], i)
            pending = [(c["id"], c["function"]["name"]) for c in entry["tool_calls"]]
            entry["content"] = message.get("content") or None
        elif message.get("role") == "tool":
            entry["tool_call_id"], name = _answered(message, pending, where)
            entry.update({"name": name} if name else {})
        out.append(entry)
    return out


def _calls(calls: object, i: int) -> list[JSONObject]:
    where = f"messages[{i}].tool_calls"
    if not isinstance(calls, list):
        raise bad_request(f"{where} must be a list of {{function: {{name, arguments}}}}", where)
    out = []
    for j, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise bad_request(f"{where}[{j}].function must be an object with a name and arguments", f"{where}[{j}]")
        arguments = function.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else f"call_{i}_{j}"
        out.append({"id": call_id, "type": "function", "function": {"name": function.get("name"), "arguments": text}})
    return out


def _answered(message: JSONObject, pending: list[tuple[str, str]], where: str) -> tuple[str, str | None]:
    """The id (and function name) of the call a tool result answers: its tool_call_id, else the first unanswered
    call of that tool_name (or the first unanswered one); a fresh id when no call is waiting."""
    name = message.get("tool_name", message.get("name"))
    if name is not None and not isinstance(name, str):
        raise bad_request(f"{where}.tool_name must be a string", f"{where}.tool_name")
    given = message.get("tool_call_id")
    if isinstance(given, str) and given:
        return given, name
    match = next((p for p in pending if name is None or p[1] == name), None)
    if match is None:
        return new_call_id(), name
    pending.remove(match)
    return match[0], name or match[1]


def _no_images(body: JSONObject, where: str) -> None:
    if body.get("images"):
        raise bad_request(f"{where}: images are not supported by this server (the loaded models read text)", where)
