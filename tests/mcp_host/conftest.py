"""The MCP test server: tests/mcp_host/echo_server.py run over stdio by this Python."""

import shlex
import sys
from pathlib import Path

import psutil
import pytest

ECHO_SERVER = Path(__file__).with_name("echo_server.py")
ECHO_COMMAND = shlex.join([sys.executable, str(ECHO_SERVER)])


def kill_echo_servers() -> int:
    """Kill this process's echo server children (a server that dies); how many were killed."""
    killed = 0
    for child in psutil.Process().children(recursive=True):
        try:
            if any("echo_server.py" in part for part in child.cmdline()):
                child.kill()
                killed += 1
        except psutil.Error:
            pass
    return killed


@pytest.fixture
def echo_command() -> str:
    return ECHO_COMMAND
