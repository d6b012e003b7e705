"""A tiny MCP server for the tests: one tool, add(a, b), returning a + b as text.

`python tests/mcp_host/echo_server.py` serves over stdio; `--http PORT` over streamable HTTP (/mcp) and
`--sse PORT` over SSE (/sse), on 127.0.0.1. Works with the mcp SDK 1.x (FastMCP) and 2.x (MCPServer)."""

import sys

try:
    from mcp.server.mcpserver import MCPServer as Server

    V2 = True
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server

    V2 = False

server = Server("echo")


@server.tool()
def add(a: float, b: float) -> str:
    """Add two numbers."""
    total = a + b
    return str(int(total) if float(total).is_integer() else total)


def main(args: list[str]) -> None:
    if not args:
        server.run("stdio")
        return
    transport = {"--http": "streamable-http", "--sse": "sse"}[args[0]]
    port = int(args[1])
    if V2:
        server.run(transport, host="127.0.0.1", port=port)
    else:
        server.settings.host, server.settings.port = "127.0.0.1", port
        server.run(transport)


if __name__ == "__main__":
    main(sys.argv[1:])
