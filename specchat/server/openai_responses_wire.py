"""OpenAI's Responses API request in terms of the chat the server already speaks: input items, instructions,
flat function tools, tool_choice and text.format become an OpenAI chat body; a field that would change the
answer and cannot be applied here is a 400 naming it. Pure functions over JSON; the route is in
openai_responses.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specchat.engine.json_types import JSONObject, as_list

from .errors import ApiError, bad_request, not_found

# Sent on to the chat parser as they are: sampling, SpecChat's extras, the penalties it refuses by name.
PASSED = (
    "model",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "stream",
    "speculation",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
    "logit_bias",
    "parallel_tool_calls",
)
# Features that would change the answer and that SpecChat does not have: refused whenever they are set.
REFUSED = ("conversation", "prompt", "max_tool_calls", "context_management")
TEXT_PARTS = ("input_text", "output_text")
ROLES = ("user", "system", "developer", "assistant")


@dataclass(frozen=True)
class ResponsesRequest:
    """A Responses request read: its chat body, the conversation to keep, and what the response repeats."""

    chat: JSONObject  # an OpenAI chat body for parse_request
    history: list[JSONObject]  # the chat messages without the instructions (kept for previous_response_id)
    echo: JSONObject  # the request's fields the response object repeats
    store: bool
    parallel_tool_calls: bool


def read_request(body: object, earlier: Callable[[str], list[JSONObject] | None]) -> ResponsesRequest:
    """The chat body for a Responses request; `earlier` gives a kept response's conversation (None: unknown)."""
    if not isinstance(body, dict):
        raise bad_request("The request body must be a JSON object")
    _refuse_unsupported(body)
    history = _previous(body.get("previous_response_id"), earlier) + input_messages(body.get("input"))
    chat: JSONObject = {name: body[name] for name in PASSED if name in body}
    chat["messages"] = _instructions(body.get("instructions")) + history
    if body.get("max_output_tokens") is not None:
        chat["max_tokens"] = body["max_output_tokens"]
    if body.get("tools"):
        chat["tools"] = [_tool(tool, i) for i, tool in enumerate(_list(body["tools"], "tools"))]
    if body.get("tool_choice") is not None:
        chat["tool_choice"] = _tool_choice(body["tool_choice"])
    fmt = _format(body.get("text"))
    if fmt is not None:
        chat["response_format"] = fmt
    store, parallel = _flag(body, "store"), _flag(body, "parallel_tool_calls")
    return ResponsesRequest(chat, history, _echo(body, parallel, store), store, parallel)


def renamed(error: ApiError) -> ApiError:
    """A chat parser's error with its param named as the Responses request names the field."""
    param = error.param or ""
    for chat, responses in (("messages", "input"), ("max_tokens", "max_output_tokens"), ("response_format", "text")):
        if param == chat or param.startswith(chat + ".") or param.startswith(chat + "["):
            error.param = "text.format" if chat == "response_format" else responses
    return error


def input_messages(value: object) -> list[JSONObject]:
    """The input (a string, or a list of message, function_call and function_call_output items) as chat messages."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    out: list[JSONObject] = []
    for i, item in enumerate(_list(value, "input")):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise bad_request(f"{where} must be an input item object", where)
        kind = item.get("type", "message")
        if kind == "message":
            out.append(_message(item, where))
        elif kind == "function_call":
            _add_call(out, item, where)
        elif kind == "function_call_output":
            out.append(_call_output(item, where))
        else:
            raise bad_request(
                f"{where}.type {kind!r} is not supported here: SpecChat takes message, function_call and "
                "function_call_output items",
                f"{where}.type",
            )
    return out


def _refuse_unsupported(body: JSONObject) -> None:
    """What would change the answer and is not applied here is refused, never ignored."""
    reasoning = body.get("reasoning")
    effort = reasoning.get("effort") if isinstance(reasoning, dict) else reasoning
    if effort not in (None, "none"):
        _unsupported("reasoning", "reasoning effort is not supported: leave reasoning out or send effort none")
    if body.get("background"):
        _unsupported("background", "background responses are not supported: send background false")
    if body.get("include"):
        _unsupported("include", "include is not supported: SpecChat adds no extra output data (send [])")
    if body.get("top_logprobs"):
        _unsupported("top_logprobs", "top_logprobs is not supported on /v1/responses (use /v1/chat/completions)")
    if body.get("truncation") not in (None, "disabled"):
        _unsupported("truncation", "truncation auto is not supported: a prompt over the context is a 400")
    for name in REFUSED:
        if body.get(name) is not None:
            _unsupported(name, f"{name} is not supported by this server")


def _unsupported(param: str, message: str) -> None:
    raise bad_request(message, param, "unsupported_parameter")


def _previous(value: object, earlier: Callable[[str], list[JSONObject] | None]) -> list[JSONObject]:
    if value is None:
        return []
    if not isinstance(value, str) or not value:
        raise bad_request("previous_response_id must be a response id", "previous_response_id")
    messages = earlier(value)
    if messages is None:
        raise not_found(
            f"previous_response_id {value!r} is not a response this server keeps (it keeps recent ones in memory, "
            "not those sent with store false, and none across a restart)",
            "previous_response_id",
            "previous_response_not_found",
        )
    return [dict(m) for m in messages]


def _instructions(value: object) -> list[JSONObject]:
    if value is None or value == "":
        return []
    if not isinstance(value, str):
        raise bad_request("instructions must be a string", "instructions")
    return [{"role": "system", "content": value}]


def _message(item: JSONObject, where: str) -> JSONObject:
    role = item.get("role")
    if role not in ROLES:
        raise bad_request(f"{where}.role must be one of {', '.join(ROLES)}", f"{where}.role")
    return {"role": role, "content": _text(item.get("content"), f"{where}.content")}


def _text(content: object, where: str) -> str:
    """A string, or a list of input_text / output_text parts, as one text."""
    if isinstance(content, str):
        return content
    texts = []
    for j, part in enumerate(_list(content, where)):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in TEXT_PARTS or not isinstance(part.get("text"), str):
            raise bad_request(
                f"{where}[{j}] must be a text part (input_text or output_text), got {kind!r}: SpecChat reads text",
                f"{where}[{j}].type",
            )
        texts.append(part["text"])
    return "".join(texts)


def _add_call(out: list[JSONObject], item: JSONObject, where: str) -> None:
    """A function_call item: a tool call of the assistant turn before it (one turn for calls in a row)."""
    for name in ("call_id", "name"):
        if not isinstance(item.get(name), str) or not item[name]:
            raise bad_request(f"{where}.{name} must be a non-empty string", f"{where}.{name}")
    arguments = item.get("arguments", "")
    if not isinstance(arguments, str):
        raise bad_request(f"{where}.arguments must be the JSON text of the arguments", f"{where}.arguments")
    call: JSONObject = {
        "id": item["call_id"],
        "type": "function",
        "function": {"name": item["name"], "arguments": arguments},
    }
    if out and out[-1]["role"] == "assistant":
        out[-1]["tool_calls"] = [*as_list(out[-1].get("tool_calls")), call]
    else:
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})


def _call_output(item: JSONObject, where: str) -> JSONObject:
    if not isinstance(item.get("call_id"), str) or not item["call_id"]:
        raise bad_request(f"{where}.call_id must be the call_id of the function_call it answers", f"{where}.call_id")
    return {"role": "tool", "tool_call_id": item["call_id"], "content": _text(item.get("output"), f"{where}.output")}


def _tool(tool: object, i: int) -> JSONObject:
    """A flat function tool ({"type": "function", "name", ...}) in chat's nested shape."""
    kind = tool.get("type") if isinstance(tool, dict) else None
    if not isinstance(tool, dict) or kind != "function":
        raise bad_request(
            f"tools[{i}].type {kind!r} is not supported: only function tools run here (built-in tools such as "
            "web_search run on OpenAI's servers)",
            f"tools[{i}].type",
            "unsupported_parameter",
        )
    function = {k: tool[k] for k in ("name", "description", "parameters") if tool.get(k) is not None}
    return {"type": "function", "function": function}


def _tool_choice(choice: object) -> str | JSONObject:
    if isinstance(choice, str):
        return choice  # none, auto or required: checked by the chat parser
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise bad_request('tool_choice must be none, auto, required or {"type": "function", "name": ...}', "tool_choice")


def _format(text: object) -> JSONObject | None:
    """text.format as chat's response_format (None for plain text)."""
    if text is None:
        return None
    if not isinstance(text, dict):
        raise bad_request('text must be an object such as {"format": {"type": "text"}}', "text")
    if text.get("verbosity") not in (None, "medium"):
        _unsupported("text.verbosity", "text.verbosity is not supported: leave it out or send medium")
    fmt = text.get("format")
    if fmt is None:
        return None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if isinstance(fmt, dict) and kind in ("text", "json_object"):
        return {"type": kind}
    if isinstance(fmt, dict) and kind == "json_schema":
        spec = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        return {"type": "json_schema", "json_schema": spec}
    raise bad_request(f"text.format.type must be text, json_object or json_schema, got {kind!r}", "text.format.type")


def _echo(body: JSONObject, parallel: bool, store: bool) -> JSONObject:
    """The request's fields as the response object repeats them."""
    return {
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "metadata": body.get("metadata") or {},
        "parallel_tool_calls": parallel,
        "previous_response_id": body.get("previous_response_id"),
        "store": store,
        "temperature": body.get("temperature"),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice") or "auto",
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p"),
        "truncation": "disabled",
    }


def _flag(body: JSONObject, name: str) -> bool:
    """A true-by-default boolean field."""
    value = body.get(name)
    if value is None:
        return True
    if not isinstance(value, bool):
        raise bad_request(f"{name} must be true or false, got {value!r}", name)
    return value


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise bad_request(f"{where} must be a list", where)
    return value
