"""What may run without asking, and the messages a tool round adds to the conversation.

Nothing runs without the user's say-so: a call needs Approve, unless the user chose "Always allow this tool"
for that tool on that server (saved with the server in the settings). Deny answers the model with a tool
message saying the user declined."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from enum import StrEnum
from typing import Any

from .specs import ServerSpec


class Decision(StrEnum):
    """The user's answer to a tool call's card."""

    APPROVE = "approve"
    DENY = "deny"
    ALWAYS = "always"  # approve, and run this tool without asking from now on


class ApprovalPolicy:
    """The tools the user always allows, per server."""

    def __init__(self, servers: Iterable[ServerSpec] = ()):
        self._allowed = {(spec.name, tool) for spec in servers for tool in spec.always_allow}

    def allowed(self, server: str, tool: str) -> bool:
        """True when this tool of this server runs without asking."""
        return (server, tool) in self._allowed

    def allow_always(self, server: str, tool: str) -> None:
        self._allowed.add((server, tool))

    def saved_into(self, servers: Sequence[ServerSpec]) -> list[ServerSpec]:
        """The server specs with every always-allowed tool of theirs in always_allow (what the settings keep)."""
        out = []
        for spec in servers:
            mine = [tool for server, tool in sorted(self._allowed) if server == spec.name]
            kept = tuple(dict.fromkeys([*spec.always_allow, *mine]))
            out.append(replace(spec, always_allow=kept))
        return out


def parse_arguments(arguments: str | Mapping[str, Any]) -> dict[str, Any]:
    """A call's arguments as an object (the parser gives them as JSON text); anything else is an empty object."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def assistant_message(content: str, calls: Sequence[tuple[str, str, str | Mapping[str, Any]]]) -> dict[str, Any]:
    """The assistant's turn that made calls, as chat templates take it: its text outside the calls and
    tool_calls of (id, name, arguments); the arguments as an object (templates write them as JSON)."""
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": parse_arguments(arguments)}}
            for call_id, name, arguments in calls
        ],
    }


def tool_message(call_id: str, name: str, text: str) -> dict[str, Any]:
    """A tool's result going back to the model."""
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": text}


def declined_message(call_id: str, name: str) -> dict[str, Any]:
    """The tool message for a call the user denied."""
    return tool_message(call_id, name, f"The user declined to run the tool {name}; it was not called.")


def format_arguments(arguments: str | Mapping[str, Any]) -> str:
    """A call's arguments as indented JSON, for its card."""
    return json.dumps(parse_arguments(arguments), ensure_ascii=False, indent=2)
