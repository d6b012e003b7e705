"""An OpenAI chat's messages, checked and put in the shape chat templates read (Qwen's included): a developer
message is a system one, an assistant's tool calls carry their arguments as an object, a tool result names
its call. Every malformed field is a 400 that names it."""

from __future__ import annotations

import json

from specchat.engine.json_types import JSONObject, objects

from .errors import bad_request
from .tools import function_name, new_call_id

ROLES = ("system", "developer", "user", "assistant", "tool")


def parse_messages(messages: object) -> tuple[JSONObject, ...]:
    """The chat's messages as the chat template takes them; ApiError naming the first bad field."""
    if not isinstance(messages, list) or not messages:
        raise bad_request("messages must be a non-empty list of {role, content}", "messages")
    out: list[JSONObject] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise bad_request(f"messages[{i}].role must be one of {', '.join(ROLES)}", f"messages[{i}].role")
        role = message["role"]
        if role == "assistant":
            out.append(_assistant(message, i))
        elif role == "tool":
            out.append(_tool_result(message, i, out))
        else:
            out.append({"role": "system" if role == "developer" else role, "content": _text(message, i)})
    return tuple(out)


def _text(message: JSONObject, i: int, empty_ok: bool = False) -> str:
    """A message's text: a string, or a list of text parts (other part types are refused); None when empty_ok."""
    content = message.get("content")
    if content is None and empty_ok:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in content
    ):
        return "".join(p["text"] for p in content)
    raise bad_request(
        f"messages[{i}].content must be text (a string or a list of text parts)", f"messages[{i}].content"
    )


def _assistant(message: JSONObject, i: int) -> JSONObject:
    """An assistant turn: its text ("" when null with tool calls) and its tool calls with object arguments."""
    calls = message.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise bad_request(f"messages[{i}].tool_calls must be a list of tool calls", f"messages[{i}].tool_calls")
    out: JSONObject = {"role": "assistant", "content": _text(message, i, empty_ok=bool(calls))}
    if calls:
        out["tool_calls"] = [_call(call, f"messages[{i}].tool_calls[{j}]") for j, call in enumerate(calls)]
    if isinstance(message.get("reasoning_content"), str):  # Qwen3 templates show it for the latest turns
        out["reasoning_content"] = message["reasoning_content"]
    return out


def _call(call: object, where: str) -> JSONObject:
    """{"id", "type": "function", "function": {"name", "arguments"}}; arguments a JSON object or its text."""
    if not isinstance(call, dict):
        raise bad_request(f"{where} must be an object with a function", where)
    if call.get("type", "function") != "function":
        raise bad_request(f"{where}.type must be 'function', got {call.get('type')!r}", f"{where}.type")
    call_id = call.get("id")
    if call_id is not None and (not isinstance(call_id, str) or not call_id):
        raise bad_request(f"{where}.id must be a non-empty string", f"{where}.id")
    function = call.get("function")
    if not isinstance(function, dict):
        raise bad_request(f"{where}.function must be an object with a name and arguments", f"{where}.function")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise bad_request(f"{where}.function.name must be a non-empty string", f"{where}.function.name")
    arguments = _arguments(function.get("arguments"), f"{where}.function.arguments")
    return {"id": call_id or new_call_id(), "type": "function", "function": {"name": name, "arguments": arguments}}


def _arguments(arguments: object, where: str) -> JSONObject:
    """A call's arguments as an object (the templates render a mapping; OpenAI sends its JSON text)."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            raise bad_request(f"{where} is not valid JSON: {exc}", where) from None
    if not isinstance(arguments, dict):
        raise bad_request(f"{where} must be a JSON object (or the text of one)", where)
    return arguments


def _tool_result(message: JSONObject, i: int, earlier: list[JSONObject]) -> JSONObject:
    """A tool's result: its text, the id of the call it answers, and that call's function name when known."""
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise bad_request(
            f"messages[{i}].tool_call_id must be the id of the tool call this result answers",
            f"messages[{i}].tool_call_id",
        )
    out: JSONObject = {"role": "tool", "content": _text(message, i), "tool_call_id": call_id}
    name = message.get("name")
    if name is not None and not isinstance(name, str):
        raise bad_request(f"messages[{i}].name must be a string", f"messages[{i}].name")
    name = name or _call_name(earlier, call_id)
    if name:
        out["name"] = name
    return out


def _call_name(earlier: list[JSONObject], call_id: str) -> str | None:
    """The function name of the earlier tool call with this id (templates that show a result's tool read it)."""
    for message in reversed(earlier):
        for call in objects(message.get("tool_calls")):
            if call.get("id") == call_id:
                return function_name(call)
    return None
