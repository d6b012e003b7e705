"""Anthropic's Messages API in terms of the OpenAI chat the server already speaks: a request becomes an
OpenAI chat body, and the OpenAI response (whole, or chunk by chunk) becomes Anthropic's message or its
stream of events. Pure functions over JSON; the route is in anthropic_route.py."""

from __future__ import annotations

import json
import uuid
from typing import Any

from specchat.engine.json_types import JSONObject, JSONValue, as_int, as_object, as_str, objects

from .errors import ApiError, bad_request

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    413: "request_too_large",
}


def openai_body(body: object) -> JSONObject:
    """The OpenAI chat body for an Anthropic Messages request; 400 naming the field that is wrong."""
    if not isinstance(body, dict):
        raise bad_request("The request body must be a JSON object")
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise bad_request("max_tokens is required: a whole number of tokens", "max_tokens")
    out: JSONObject = {"messages": _system(body.get("system")) + _messages(body.get("messages"))}
    out["max_tokens"] = max_tokens
    for name in ("model", "temperature", "top_p", "top_k", "stream", "speculation"):
        if name in body:
            out[name] = body[name]
    if body.get("stop_sequences") is not None:
        out["stop"] = body["stop_sequences"]
    if body.get("tools"):
        out["tools"] = [_tool(tool, i) for i, tool in enumerate(_list(body["tools"], "tools"))]
    if body.get("tool_choice") is not None:
        out["tool_choice"] = _tool_choice(body["tool_choice"])
        if body["tool_choice"].get("disable_parallel_tool_use") is True:
            out["parallel_tool_calls"] = False
    if body.get("output_config") is not None:
        raise bad_request(
            "output_config is not supported by this server: leave it out", "output_config", "unsupported_parameter"
        )
    if body.get("thinking") is not None:
        out["chat_template_kwargs"] = {"enable_thinking": thinking_switch(body["thinking"])}
    if out.get("stream"):
        out["stream_options"] = {"include_usage": True}
    return out


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise bad_request(f"{where} must be a list", where)
    return value


def _system(system: object) -> list[JSONObject]:
    if system is None or system == "":
        return []
    if isinstance(system, str):
        return [{"role": "system", "content": system}]
    blocks = _list(system, "system")
    return [{"role": "system", "content": "".join(_text(block, f"system[{i}]") for i, block in enumerate(blocks))}]


def _text(block: object, where: str) -> str:
    if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
        raise bad_request(f"{where} must be a text block: {{'type': 'text', 'text': ...}}", where)
    return str(block["text"])


def _messages(messages: object) -> list[JSONObject]:
    if not isinstance(messages, list) or not messages:
        raise bad_request("messages must be a non-empty list of {role, content}", "messages")
    out: list[JSONObject] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise bad_request(f"{where}.role must be user or assistant", f"{where}.role")
        content = message.get("content")
        if isinstance(content, str):
            out.append({"role": message["role"], "content": content})
            continue
        blocks = _list(content, f"{where}.content")
        out += _assistant(blocks, where) if message["role"] == "assistant" else _user(blocks, where)
    return out


def _user(blocks: list[Any], where: str) -> list[JSONObject]:
    """A user turn: its tool_result blocks become tool messages (first), its text one user message."""
    results, text = [], []
    for j, block in enumerate(blocks):
        at = f"{where}.content[{j}]"
        if isinstance(block, dict) and block.get("type") == "tool_result":
            if not isinstance(block.get("tool_use_id"), str):
                raise bad_request(f"{at}.tool_use_id must be the id of the tool_use it answers", f"{at}.tool_use_id")
            results.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": _result(block, at)})
        else:
            text.append(_text(block, at))
    return results + ([{"role": "user", "content": "".join(text)}] if text else [])


def _result(block: JSONObject, where: str) -> str:
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "".join(_text(part, f"{where}.content[{k}]") for k, part in enumerate(_list(content, f"{where}.content")))


def _assistant(blocks: list[Any], where: str) -> list[JSONObject]:
    """An assistant turn: text blocks are its content, tool_use blocks its tool calls."""
    text: list[str] = []
    calls: list[JSONValue] = []
    for j, block in enumerate(blocks):
        at = f"{where}.content[{j}]"
        if isinstance(block, dict) and block.get("type") == "tool_use":
            if not isinstance(block.get("name"), str) or not isinstance(block.get("input", {}), dict):
                raise bad_request(f"{at} must have a name and an input object", at)
            function = {"name": block["name"], "arguments": json.dumps(block.get("input", {}))}
            calls.append({"id": str(block.get("id") or _call_id()), "type": "function", "function": function})
        else:
            text.append(_text(block, at))
    message: JSONObject = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = calls
    return [message]


def thinking_switch(thinking: object) -> bool:
    """thinking {"type": "enabled"} or {"type": "disabled"} as the chat template's enable_thinking."""
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind not in ("enabled", "disabled"):
        raise bad_request(f"thinking.type must be enabled or disabled, got {kind!r}", "thinking.type")
    return bool(kind == "enabled")


def _tool(tool: object, i: int) -> JSONObject:
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
        raise bad_request(f"tools[{i}] must have a name", f"tools[{i}].name")
    schema = tool.get("input_schema")
    if not isinstance(schema, dict):
        raise bad_request(
            f"tools[{i}].input_schema is required: the JSON schema of the tool's input (server tools such as "
            f"{tool.get('type')!r} are not run here)",
            f"tools[{i}].input_schema",
        )
    function = {"name": tool["name"], "description": tool.get("description", ""), "parameters": schema}
    return {"type": "function", "function": function}


def _tool_choice(choice: object) -> str | JSONObject:
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind in ("auto", "none"):
        return str(kind)
    if kind == "any":
        return "required"
    if kind == "tool" and isinstance(choice, dict) and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise bad_request("tool_choice.type must be auto, any, tool (with a name) or none", "tool_choice")


def _call_id() -> str:
    return "toolu_" + uuid.uuid4().hex[:24]


def tool_use_id(call_id: object) -> str:
    """Anthropic's id for an OpenAI tool call's id (call_X becomes toolu_X; a fresh one when there is none)."""
    if not isinstance(call_id, str) or not call_id:
        return _call_id()
    return call_id if call_id.startswith("toolu_") else "toolu_" + call_id.removeprefix("call_")


def stop_reason(openai_reason: str | None, stop_sequence: str | None) -> str:
    """Anthropic's stop_reason for an OpenAI finish_reason."""
    if stop_sequence is not None:
        return "stop_sequence"
    return STOP_REASONS.get(openai_reason or "stop", "end_turn")


def content_blocks(message: JSONObject) -> list[JSONObject]:
    """An OpenAI assistant message's text and tool calls as Anthropic content blocks."""
    blocks: list[JSONObject] = []
    if message.get("content"):
        blocks.append({"type": "text", "text": message["content"]})
    for call in objects(message.get("tool_calls")):
        function = as_object(call.get("function"))
        name, arguments = as_str(function.get("name")), _arguments(function.get("arguments"))
        blocks.append({"type": "tool_use", "id": tool_use_id(call.get("id")), "name": name, "input": arguments})
    return blocks


def _arguments(arguments: JSONValue) -> JSONObject:
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = json.loads(str(arguments or "{}"))
    except ValueError:
        return {"_raw": arguments}
    return parsed if isinstance(parsed, dict) else {"_value": parsed}


def message_body(whole: JSONObject, model: str, stop_sequence: str | None = None) -> JSONObject:
    """Anthropic's message for a whole OpenAI chat completion."""
    choice = objects(whole.get("choices"))[0]
    usage = as_object(whole.get("usage"))
    tokens = {
        "input_tokens": as_int(usage.get("prompt_tokens")),
        "output_tokens": as_int(usage.get("completion_tokens")),
    }
    return {
        "id": "msg_" + uuid.uuid4().hex[:24],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content_blocks(as_object(choice.get("message"))),
        "stop_reason": stop_reason(as_str(choice.get("finish_reason")) or None, stop_sequence),
        "stop_sequence": stop_sequence,
        "usage": tokens,
    }


def error_body(error: ApiError) -> JSONObject:
    """An ApiError in Anthropic's shape."""
    kind = ERROR_TYPES.get(error.status, "overloaded_error" if error.status == 503 else "api_error")
    return {"type": "error", "error": {"type": kind, "message": error.message}}
