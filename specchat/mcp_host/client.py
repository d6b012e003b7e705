"""McpHost: the app's MCP client manager. One background thread runs one asyncio event loop holding a session
per configured server (the official `mcp` SDK); the rest of the app calls it synchronously, from any thread.

A server that fails to start, or dies, is said once (on_error, and `errors`) and the others go on; its tools
are no longer offered. Nothing here imports Qt."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .connection import WATCH_S, Connection, describe_error
from .specs import McpTool, ServerSpec, ServerStatus, ToolRegistry, ToolResult

log = logging.getLogger(__name__)
CONNECT_TIMEOUT_S = 30.0  # a server has this long to start, initialize and list its tools
CALL_TIMEOUT_S = 120.0  # a tool call that has not answered by then is given up (the server lives on)
CLOSE_TIMEOUT_S = 10.0


class McpHost:
    """The configured servers' sessions on one event-loop thread, started lazily, with a thread-safe API:
    tools(), call(name, arguments), statuses(), close()."""

    def __init__(
        self,
        servers: Sequence[ServerSpec],
        on_error: Callable[[str], None] | None = None,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        call_timeout: float = CALL_TIMEOUT_S,
        watch_s: float = WATCH_S,
    ):
        self.servers = tuple(servers)
        self.on_error = on_error
        self.connect_timeout, self.call_timeout, self.watch_s = connect_timeout, call_timeout, watch_s
        self.errors: list[str] = []  # every failure said, in order
        self.closed = False
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._connections = [Connection(spec, self._say) for spec in self.servers]
        self._tasks: list[concurrent.futures.Future[None]] = []
        self._said: set[str] = set()

    # --- lifecycle ---

    def start(self) -> None:
        """Start the loop thread and connect every server (in the background); idempotent."""
        with self._lock:
            if self._loop is not None or self.closed or not self._connections:
                return
            loop = asyncio.new_event_loop()
            ready = threading.Event()
            self._thread = threading.Thread(target=self._run_loop, args=(loop, ready), name="mcp-host", daemon=True)
            self._thread.start()
            ready.wait()
            self._loop = loop
            for connection in self._connections:
                self._tasks.append(
                    asyncio.run_coroutine_threadsafe(connection.run(self.connect_timeout, self.watch_s), loop)
                )

    @staticmethod
    def _run_loop(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
        finally:
            loop.close()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Start if needed and wait until every server is connected or has failed; False after timeout."""
        self.start()
        wait = self.connect_timeout + 5 if timeout is None else timeout
        return all(connection.settled.wait(wait) for connection in self._connections)

    def close(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Close every session (stopping stdio servers) and the loop thread; the host cannot be started again."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._stop_all(timeout), loop).result(timeout + 2)
        except Exception:  # a session that would not close: the thread is a daemon, the process exits anyway
            log.exception("MCP sessions did not close cleanly")
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)

    async def _stop_all(self, timeout: float) -> None:
        for connection in self._connections:
            connection.stop()
        tasks = [asyncio.wrap_future(task) for task in self._tasks]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)

    # --- what the app asks ---

    def tools(self, timeout: float | None = None) -> list[McpTool]:
        """The tools of every server that is up (waiting for those still connecting, up to timeout)."""
        return list(self.registry(timeout))

    def registry(self, timeout: float | None = None) -> ToolRegistry:
        """The tools by name (see tools())."""
        if self.closed:
            return ToolRegistry()
        self.wait_ready(timeout)
        return ToolRegistry(tool for connection in self._connections if connection.up for tool in connection.tools)

    def statuses(self) -> list[ServerStatus]:
        """Each configured server's state and tool count, without waiting."""
        return [connection.status() for connection in self._connections]

    def call(self, name: str, arguments: Mapping[str, Any], timeout: float | None = None) -> ToolResult:
        """Run a tool on the server offering it and return its text; a failure comes back as an error result."""
        tool = self.registry().get(name)
        if tool is None or self._loop is None:
            return ToolResult(f"No MCP server offers a tool named {name!r}.", True)
        connection = next(c for c in self._connections if c.spec.name == tool.server)
        limit = self.call_timeout if timeout is None else timeout
        future = asyncio.run_coroutine_threadsafe(connection.call(name, dict(arguments), limit), self._loop)
        try:
            return future.result(limit + 10)
        except Exception as error:  # the loop went away under the call (closing)
            future.cancel()
            return ToolResult(f"The tool {name} could not run: {describe_error(error)}", True)

    # --- errors ---

    def _say(self, server: str, message: str) -> None:
        """Say a server's failure once (on the loop thread)."""
        if server in self._said or self.closed:
            return
        self._said.add(server)
        self.errors.append(message)
        log.warning("%s", message)
        if self.on_error is not None:
            try:
                self.on_error(message)
            except Exception:
                log.exception("the MCP error listener failed")
