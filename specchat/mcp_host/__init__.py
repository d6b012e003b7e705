"""The app as an MCP host: the servers the user configured, their tools, calls, and what runs without asking.

Qt-free; the UI reaches it through `McpHost`'s synchronous, thread-safe API."""

from .approvals import ApprovalPolicy, assistant_message, declined_message, tool_message
from .client import McpHost
from .specs import McpTool, ServerSpec, ServerStatus, ToolRegistry, ToolResult, specs_from

__all__ = [
    "ApprovalPolicy",
    "McpHost",
    "McpTool",
    "ServerSpec",
    "ServerStatus",
    "ToolRegistry",
    "ToolResult",
    "assistant_message",
    "declined_message",
    "specs_from",
    "tool_message",
]
