"""What the MCP host deals in: the servers the user configured, the tools they offer (and the OpenAI-style
function specs the chat template reads), a tool's result, a server's status, and the registry that says
which server offers which tool. Plain frozen data, no SDK and no Qt."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Transport = Literal["stdio", "http", "sse"]
State = Literal["off", "connecting", "ready", "failed"]


@dataclass(frozen=True)
class ServerSpec:
    """One configured MCP server: a command line run over stdio, or a URL (streamable HTTP, or SSE when the
    path ends in /sse), and the tools the user always allows on it."""

    name: str
    command: str = ""
    url: str = ""
    always_allow: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ServerSpec:
        """A spec from its settings entry ({"name", "command" or "url", "always_allow"})."""
        return cls(
            str(data.get("name", "")),
            str(data.get("command") or ""),
            str(data.get("url") or ""),
            tuple(str(t) for t in data.get("always_allow", ())),
        )

    def to_dict(self) -> dict[str, Any]:
        """Its settings entry."""
        entry: dict[str, Any] = {"name": self.name}
        if self.url:
            entry["url"] = self.url
        else:
            entry["command"] = self.command
        entry["always_allow"] = list(self.always_allow)
        return entry

    @property
    def transport(self) -> Transport:
        if not self.url:
            return "stdio"
        return "sse" if self.url.split("?", 1)[0].rstrip("/").endswith("/sse") else "http"

    def argv(self) -> list[str]:
        """The command line as the program and its arguments (shell quoting rules, no shell)."""
        return shlex.split(self.command)

    def where(self) -> str:
        """The command or the URL, for messages."""
        return self.url or self.command


def specs_from(entries: Iterable[Mapping[str, Any]]) -> tuple[ServerSpec, ...]:
    """The settings' server entries as specs."""
    return tuple(ServerSpec.from_dict(entry) for entry in entries)


@dataclass(frozen=True)
class McpTool:
    """A tool a server offers: its name, description and JSON schema of its arguments."""

    server: str
    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)

    def function_spec(self) -> dict[str, Any]:
        """The tool as an OpenAI-style function spec (what chat templates read as `tools=`)."""
        schema = dict(self.input_schema) or {"type": "object", "properties": {}}
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": schema},
        }


@dataclass(frozen=True)
class ToolResult:
    """What a tool call gave back, as text; is_error when the tool (or reaching it) failed."""

    text: str
    is_error: bool = False


@dataclass(frozen=True)
class ServerStatus:
    """A server as the Preferences list shows it."""

    name: str
    state: State
    tool_count: int = 0
    error: str | None = None

    def describe(self) -> str:
        """'ready, 3 tools', 'connecting…', 'failed: …', 'not started'."""
        if self.state == "ready":
            return f"ready, {self.tool_count} tool{'' if self.tool_count == 1 else 's'}"
        if self.state == "connecting":
            return "connecting…"
        if self.state == "failed":
            return f"failed: {self.error}" if self.error else "failed"
        return "not started"


class ToolRegistry:
    """Which server offers which tool; a name two servers offer goes to the first one configured."""

    def __init__(self, tools: Iterable[McpTool] = ()):
        self._tools: dict[str, McpTool] = {}
        self.shadowed: list[McpTool] = []  # tools hidden by an earlier server's tool of the same name
        for tool in tools:
            self.add(tool)

    def add(self, tool: McpTool) -> None:
        if tool.name in self._tools:
            self.shadowed.append(tool)
        else:
            self._tools[tool.name] = tool

    def get(self, name: str) -> McpTool | None:
        return self._tools.get(name)

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self):
        return iter(self._tools.values())

    def function_specs(self) -> list[dict[str, Any]]:
        """Every tool as an OpenAI-style function spec, in the order the servers listed them."""
        return [tool.function_spec() for tool in self._tools.values()]
