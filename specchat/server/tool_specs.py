"""A chat request's `tools` and `tool_choice`, checked (a 400 naming the field) and kept in OpenAI's shape,
which is also what the chat templates take as `tools=`; and the system note that asks for a call."""

from __future__ import annotations

import re

from specchat.engine.json_types import JSONObject

from .errors import bad_request
from .tools import function_name

TOOL_CHOICES = ("none", "auto", "required")
# A name goes into the prompt inside JSON quotes or a <function=NAME> tag, so it has none of these.
_BAD_NAME = re.compile(r'[\s<>"\\]')
MAX_NAME = 256


def parse_tools(tools: object) -> tuple[JSONObject, ...]:
    """The request's function tools: {"type": "function", "function": {name, description?, parameters?}}."""
    if tools is None:
        return ()
    if not isinstance(tools, list):
        raise bad_request("tools must be a list of function tools", "tools")
    out: list[JSONObject] = []
    for i, tool in enumerate(tools):
        out.append(_tool(tool, f"tools[{i}]"))
        if function_name(out[-1]) in (function_name(t) for t in out[:-1]):
            raise bad_request(f"tools[{i}].function.name repeats an earlier tool's name", f"tools[{i}].function.name")
    return tuple(out)


def _tool(tool: object, where: str) -> JSONObject:
    if not isinstance(tool, dict):
        raise bad_request(f'{where} must be an object: {{"type": "function", "function": {{...}}}}', where)
    if tool.get("type") != "function":
        raise bad_request(f"{where}.type must be 'function', got {tool.get('type')!r}", f"{where}.type")
    function = tool.get("function")
    if not isinstance(function, dict):
        raise bad_request(f"{where}.function must be an object with a name", f"{where}.function")
    name = function.get("name")
    if not isinstance(name, str) or not name or len(name) > MAX_NAME or _BAD_NAME.search(name):
        raise bad_request(
            f"{where}.function.name must be a name of 1-{MAX_NAME} characters without spaces, quotes, "
            f"backslashes or angle brackets, got {name!r}",
            f"{where}.function.name",
        )
    out: JSONObject = {"name": name}
    if function.get("description") is not None:
        if not isinstance(function["description"], str):
            raise bad_request(f"{where}.function.description must be a string", f"{where}.function.description")
        out["description"] = function["description"]
    if function.get("parameters") is not None:
        out["parameters"] = _parameters(function["parameters"], f"{where}.function.parameters")
    return {"type": "function", "function": out}


def _parameters(schema: object, where: str) -> JSONObject:
    """The arguments' JSON schema: an object schema (its properties an object, required a list of names)."""
    if not isinstance(schema, dict):
        raise bad_request(f"{where} must be a JSON schema object", where)
    if schema.get("type", "object") != "object":
        raise bad_request(f"{where}.type must be 'object': the arguments are an object", f"{where}.type")
    if not isinstance(schema.get("properties", {}), dict):
        raise bad_request(f"{where}.properties must be an object", f"{where}.properties")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise bad_request(f"{where}.required must be a list of property names", f"{where}.required")
    return schema


def parse_tool_choice(choice: object, tools: tuple[JSONObject, ...]) -> str | JSONObject:
    """none, auto, required, or {"type": "function", "function": {"name": one of the tools}}; auto by default."""
    if choice is None:
        return "auto"
    if isinstance(choice, str):
        if choice not in TOOL_CHOICES:
            raise bad_request(
                f"tool_choice must be one of {', '.join(TOOL_CHOICES)} or a function, got {choice!r}", "tool_choice"
            )
        if choice == "required" and not tools:
            raise bad_request("tool_choice 'required' needs tools to choose from", "tool_choice")
        return choice
    if not isinstance(choice, dict) or choice.get("type") != "function" or not isinstance(choice.get("function"), dict):
        raise bad_request(
            'tool_choice must be none, auto, required or {"type": "function", "function": {"name": ...}}', "tool_choice"
        )
    name = choice["function"].get("name")
    if name not in (function_name(t) for t in tools):
        raise bad_request(
            f"tool_choice.function.name must name one of the tools, got {name!r}", "tool_choice.function.name"
        )
    return {"type": "function", "function": {"name": name}}


def tool_choice_note(choice: str | JSONObject) -> str:
    """The system note for a choice that demands a call ("" for auto and none)."""
    if choice == "required":
        return "You must answer by calling one or more of the tools provided; do not answer in plain text."
    if isinstance(choice, dict):
        return f"You must answer by calling the function {function_name(choice)}; do not answer in plain text."
    return ""
