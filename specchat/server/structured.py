"""Structured output: OpenAI's response_format and forced tool calls as grammars the engine decodes under.

llguidance compiles them when the request is read, so a schema it cannot use is a 400 naming the field
before the request queues.
"""

from __future__ import annotations

import json

from specchat.engine.errors import ConfigError
from specchat.engine.grammar import Grammar, check_grammar
from specchat.engine.json_types import JSONObject

from .errors import bad_request
from .schema_bounds import bounded_schema

FORMAT_TYPES = ("text", "json_object", "json_schema")
# Qwen's own tool-call JSON (its chat template writes it with json.dumps' separators); fixed, never flexible
TOOL_CALL_JSON: JSONObject = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
TOOL_CHOICES = '"none", "auto", "required" or {"type": "function", "function": {"name": ...}}'


def response_format_grammar(value: object, max_tokens: int | None = None) -> Grammar | None:
    """The grammar a request's response_format asks for: None for text (or none given), any JSON object for
    json_object (or its `schema`, llama.cpp's extension), the schema for json_schema, each bounded to end within
    max_tokens (schema_bounds.py; None: as given); bad_request naming the field for anything else."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise bad_request('response_format must be an object such as {"type": "json_object"}', "response_format")
    kind = value.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        if "schema" not in value and max_tokens is None:
            return _checked(Grammar.json_object(), "response_format")
        schema = value.get("schema", {"type": "object"})
        if not isinstance(schema, dict):
            raise bad_request("response_format.schema must be a JSON schema object", "response_format.schema")
        where = "response_format.schema" if "schema" in value else "response_format"
        return _bounded(schema, max_tokens, where)
    if kind == "json_schema":
        return _bounded(_schema_of(value.get("json_schema")), max_tokens, "response_format.json_schema.schema")
    raise bad_request(
        f"response_format.type must be one of {', '.join(FORMAT_TYPES)}, got {kind!r}", "response_format.type"
    )


def _schema_of(spec: object) -> JSONObject:
    """The schema of response_format.json_schema ({"name", "schema", "strict"}); no schema: any JSON value."""
    where = "response_format.json_schema"
    if not isinstance(spec, dict):
        raise bad_request(f"{where} must be an object with a name and a schema", where)
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise bad_request(f"{where}.name must be a non-empty string", f"{where}.name")
    if "strict" in spec and not isinstance(spec["strict"], bool | None):
        raise bad_request(f"{where}.strict must be true or false, got {spec['strict']!r}", f"{where}.strict")
    schema = spec.get("schema", {})
    if not isinstance(schema, dict):
        raise bad_request(f"{where}.schema must be a JSON schema object, got {schema!r}", f"{where}.schema")
    return schema


def _bounded(schema: JSONObject, max_tokens: int | None, where: str) -> Grammar:
    """The schema, checked as given (its own errors named), then bounded to end within max_tokens (if given)."""
    given = _checked(Grammar.json_schema(schema), where)
    if max_tokens is None:
        return given
    bounded = Grammar.json_schema(bounded_schema(schema, max_tokens))
    return bounded if _compiles(bounded) else given  # a bound llguidance cannot combine: the schema as given


def check_tools(tools: object) -> None:
    """400 naming tools[i].function.parameters for a schema llguidance cannot compile, whatever tool_choice is."""
    _functions(tools)


def tool_call_grammar(
    tools: object, tool_choice: object, max_tokens: int | None = None, parallel: bool = False
) -> Grammar | None:
    """The grammar of a forced tool call (tool_choice "required", or a function named): Qwen tool calls,
    <tool_call>\\n{"name": NAME, "arguments": {...}}\\n</tool_call>, one (parallel False) or more, the arguments
    following that function's parameters schema bounded to end within max_tokens; None where the model may
    answer freely ("auto", "none", no tool_choice)."""
    if tool_choice is None or tool_choice in ("auto", "none"):
        return None
    functions = _functions(tools)
    if tool_choice == "required":
        names = list(functions)
    elif isinstance(tool_choice, dict) and tool_choice.get("type") == "function":
        names = [_named(tool_choice, functions)]
    else:
        raise bad_request(f"tool_choice must be {TOOL_CHOICES}, got {tool_choice!r}", "tool_choice")
    if not names:
        raise bad_request('tool_choice is "required" but tools lists no function', "tools")
    chosen = {name: functions[name] for name in names}
    bounded = Grammar.lark(tool_call_lark(chosen, max_tokens, parallel))
    return bounded if _compiles(bounded) else _checked(Grammar.lark(tool_call_lark(chosen, None, parallel)), "tools")


def _functions(tools: object) -> dict[str, JSONObject]:
    """Each function's name and parameters schema (no parameters: any object), from OpenAI's tools list; a
    schema llguidance cannot compile is a 400 naming that function's parameters."""
    if tools is None:
        return {}
    if not isinstance(tools, list):
        raise bad_request("tools must be a list of functions", "tools")
    functions: dict[str, JSONObject] = {}
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) and tool.get("type") == "function" else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            raise bad_request(f'tools[{i}] must be {{"type": "function", "function": {{"name": ...}}}}', f"tools[{i}]")
        parameters = function.get("parameters", {"type": "object"})
        where = f"tools[{i}].function.parameters"
        if not isinstance(parameters, dict):
            raise bad_request(f"{where} must be a JSON schema object", where)
        _checked(Grammar.json_schema(parameters), where)
        functions[function["name"]] = parameters
    return functions


def _named(tool_choice: JSONObject, functions: dict[str, JSONObject]) -> str:
    """The function a tool_choice of type "function" names; it must be among the tools."""
    function = tool_choice.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str):
        raise bad_request(f"tool_choice must be {TOOL_CHOICES}, got {tool_choice!r}", "tool_choice")
    if name not in functions:
        raise bad_request(f"tool_choice names the function {name!r}, which tools does not list", "tool_choice")
    return name


def tool_call_lark(functions: dict[str, JSONObject], max_tokens: int | None = None, parallel: bool = False) -> str:
    """A Lark grammar (llguidance's, with %json) for a Qwen tool call of one of these functions (parallel: one or
    more calls, a line apart), each call's arguments bounded to end within max_tokens."""
    rules = [
        f"call_{i}: %json {json.dumps(_call_schema(name, params, max_tokens))}"
        for i, (name, params) in enumerate(functions.items())
    ]
    calls = " | ".join(f"call_{i}" for i in range(len(functions)))
    start = 'start: block ("\\n" block)*' if parallel else "start: block"
    return "\n".join([start, 'block: "<tool_call>\\n" call "\\n</tool_call>"', f"call: {calls}", *rules])


def _call_schema(name: str, parameters: JSONObject, max_tokens: int | None) -> JSONObject:
    overhead = len(f'<tool_call>\n{{"name": "{name}", "arguments": }}\n</tool_call>')
    arguments = parameters if max_tokens is None else bounded_schema(parameters, max_tokens - overhead, closed=True)
    defs: JSONObject = {
        key: arguments.pop(key) for key in ("$defs", "definitions") if key in arguments
    }  # "#/$defs/x" resolves
    return {
        **defs,
        "type": "object",
        "properties": {"name": {"const": name}, "arguments": arguments},
        "required": ["name", "arguments"],
        "additionalProperties": False,
        "x-guidance": TOOL_CALL_JSON,
    }


def _compiles(grammar: Grammar) -> bool:
    try:
        check_grammar(grammar)
    except ConfigError:
        return False
    return True


def _checked(grammar: Grammar, param: str) -> Grammar:
    """The grammar when llguidance compiles it; a 400 naming the field with llguidance's reason otherwise."""
    try:
        check_grammar(grammar)
    except ConfigError as exc:
        raise bad_request(f"{param}: {exc}", param) from None
    return grammar
