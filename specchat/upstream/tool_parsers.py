"""mlx-lm's tool-call parsers for Qwen's <tool_call> blocks: `json_tools` (Hermes JSON, Qwen2.5/Qwen3) and
`qwen3_coder` (the <function=...> XML of Qwen3-Coder/Qwen3.5), through their public `parse_tool_call`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mlx_lm.tool_parsers import json_tools, qwen3_coder

__all__ = ["TOOL_CALL_OPEN", "TOOL_CALL_CLOSE", "json_tool_call", "xml_tool_call"]

TOOL_CALL_OPEN: str = json_tools.tool_call_start
TOOL_CALL_CLOSE: str = json_tools.tool_call_end
# What qwen3_coder raises for a value its schema type cannot read ("twelve" as an integer, "1e999", a
# schema that is not an object, a literal nested past the recursion limit).
UNREADABLE = (ValueError, TypeError, ArithmeticError, RecursionError)


def json_tool_call(body: str) -> Any:
    """The JSON value of one block's body, as mlx-lm's json_tools reads it; ValueError when it is not JSON."""
    return json_tools.parse_tool_call(body)


def xml_tool_call(text: str, tools: Sequence[Mapping[str, Any]]) -> tuple[str, dict[str, Any]]:
    """One '<function=NAME>...</function>' as mlx-lm's qwen3_coder reads it: the name and the arguments, each
    typed by the tool's schema; a value its type cannot read stays text. ValueError when it is no function."""
    try:
        call = qwen3_coder.parse_tool_call(text, list(tools))
    except UNREADABLE:
        # mlx-lm refuses the whole call for one unreadable value (an "integer" of "twelve"): type each alone
        call = _each_value_alone(text, tools)
    return str(call["name"]), dict(call["arguments"])


def _each_value_alone(text: str, tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    raw = qwen3_coder.parse_tool_call(text)  # no schema: every value as written ("null" is None)
    name, arguments = raw["name"], {}
    for key, value in raw["arguments"].items():
        one = f"<function={name}>\n<parameter={key}>\n{value}\n</parameter>\n</function>"
        try:
            arguments[key] = value if value is None else qwen3_coder.parse_tool_call(one, list(tools))["arguments"][key]
        except UNREADABLE:
            arguments[key] = value
    return {"name": name, "arguments": arguments}
