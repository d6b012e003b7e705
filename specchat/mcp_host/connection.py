"""One MCP server's session, on the host's event loop: connect (stdio, streamable HTTP or SSE through the
official `mcp` SDK), initialize, list the tools, then serve calls until stopped or until the server dies.

The SDK's transports are anyio context managers, entered and left by one task: `run` holds them open for
the session's life; calls come from other tasks on the same loop."""

from __future__ import annotations

import asyncio
import json
import logging
import tempfile
import threading
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any, TextIO, cast

from .specs import McpTool, ServerSpec, ServerStatus, State, ToolResult

log = logging.getLogger(__name__)
PING_TIMEOUT_S = 5.0
WATCH_S = 15.0  # an idle session is pinged this often
LOG_TAIL = 400  # characters of a failed stdio server's stderr quoted in its error


def describe_error(error: BaseException) -> str:
    """An exception (the first leaf of an exception group) as 'TypeName: message'."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def result_text(result: Any) -> ToolResult:
    """A CallToolResult (mcp 1.x or 2.x field names) as text: its text blocks joined, other blocks named,
    structured content as JSON when there is no text."""
    parts: list[str] = []
    for block in getattr(result, "content", None) or []:
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(block, 'type', 'content')}]")
    structured = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    is_error = bool(getattr(result, "is_error", None) or getattr(result, "isError", False))
    return ToolResult("\n".join(parts), is_error)


def _transport(spec: ServerSpec, errlog: TextIO) -> Any:
    """The SDK's client transport for a spec (an async context manager yielding the read and write streams)."""
    if spec.transport == "stdio":
        from mcp import StdioServerParameters, stdio_client

        argv = spec.argv()
        if not argv:
            raise ValueError("the server has no command")
        return stdio_client(StdioServerParameters(command=argv[0], args=argv[1:]), errlog=errlog)
    if spec.transport == "sse":
        from mcp.client.sse import sse_client

        return sse_client(spec.url)
    from mcp.client import streamable_http

    # mcp 2.x names it streamable_http_client; 1.x streamablehttp_client (which also yields a session-id getter)
    names = ("streamable_http_client", "streamablehttp_client")
    connect = next(getattr(streamable_http, n) for n in names if hasattr(streamable_http, n))
    return connect(spec.url)


class Connection:
    """A server's session and what it said: its state, its tools, its error. Lives on the host's loop."""

    def __init__(self, spec: ServerSpec, say: Callable[[str, str], None]):
        self.spec = spec
        self.say = say  # (server name, message): the host says each server's failure once
        self.state: State = "off"
        self.tools: tuple[McpTool, ...] = ()
        self.error: str | None = None
        self.settled = threading.Event()  # connected or failed
        self._session: Any = None
        self._stop: asyncio.Event | None = None
        self._errlog: TextIO | None = None

    @property
    def up(self) -> bool:
        return self.state == "ready"

    def status(self) -> ServerStatus:
        return ServerStatus(self.spec.name, self.state, len(self.tools) if self.up else 0, self.error)

    def stop(self) -> None:
        """Ask run() to close the session (on the loop thread)."""
        if self._stop is not None:
            self._stop.set()

    async def run(self, connect_timeout: float, watch_s: float = WATCH_S) -> None:
        """Connect, list the tools, and hold the session open until stop() or the server's end (pinged every
        watch_s while idle, so a server that died is said without waiting for a call)."""
        from mcp import ClientSession

        self._stop = asyncio.Event()
        self.state = "connecting"
        self._errlog = cast(TextIO, tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace"))
        try:
            async with AsyncExitStack() as stack:
                async with asyncio.timeout(connect_timeout):
                    streams = await stack.enter_async_context(_transport(self.spec, self._errlog))
                    session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
                    await session.initialize()
                    listed = await session.list_tools()
                self.tools = tuple(self._tool(tool) for tool in listed.tools)
                self._session, self.state = session, "ready"
                self.settled.set()
                await self._watch(session, watch_s)
        except (Exception, asyncio.CancelledError) as error:
            if not self._stop.is_set():
                self._fail(error)
        finally:
            self._session = None
            self.state = "off" if self.error is None else "failed"
            self.settled.set()
            self._errlog.close()

    def _tool(self, tool: Any) -> McpTool:
        schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None) or {}
        return McpTool(self.spec.name, tool.name, getattr(tool, "description", None) or "", dict(schema))

    def _fail(self, error: BaseException | str) -> None:
        """The server is down: say so once, offer its tools no more."""
        if self.state == "failed":
            return
        what = "could not start" if self.state == "connecting" else "stopped"
        reason = error if isinstance(error, str) else describe_error(error)
        if isinstance(error, TimeoutError) and self.state == "connecting":
            reason = "it did not answer in time"
        self.state, self.error = "failed", reason
        message = f"The MCP server {self.spec.name} ({self.spec.where()}) {what}: {reason}"
        tail = self._log_tail()
        if tail:
            message += f"\nIt said: {tail}"
        self.say(self.spec.name, message)
        self.stop()

    def _log_tail(self) -> str:
        if self._errlog is None or self._errlog.closed:
            return ""
        try:
            self._errlog.seek(0)
            return self._errlog.read()[-LOG_TAIL:].strip()
        except (OSError, ValueError):
            return ""

    async def call(self, name: str, arguments: dict[str, Any], timeout: float) -> ToolResult:
        """Run one tool; a server found dead meanwhile is failed (said once) and the call answers an error."""
        session = self._session
        if session is None or not self.up:
            return ToolResult(f"The MCP server {self.spec.name} is not running.", True)
        try:
            async with asyncio.timeout(timeout):
                return result_text(await session.call_tool(name, arguments))
        except TimeoutError:
            return ToolResult(f"The tool {name} did not answer within {timeout:g} s.", True)
        except Exception as error:
            if not await self._alive(session):
                self._fail(error)
            return ToolResult(f"The tool {name} failed: {describe_error(error)}", True)

    async def _watch(self, session: Any, watch_s: float) -> None:
        assert self._stop is not None
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._stop.wait(), watch_s)
            except TimeoutError:
                if not self._stop.is_set() and not await self._alive(session):
                    self._fail("it no longer answers")

    async def _alive(self, session: Any) -> bool:
        try:
            async with asyncio.timeout(PING_TIMEOUT_S):
                await session.send_ping()
        except Exception:
            return False
        return True
