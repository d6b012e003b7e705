"""McpHost against a real MCP server over stdio (tests/mcp_host/echo_server.py): tools, calls, failures."""

import threading

import pytest

from specchat.mcp_host import McpHost, ServerSpec, ToolResult
from specchat.mcp_host.approvals import ApprovalPolicy, assistant_message, declined_message, tool_message
from specchat.settings import settings_from_dict
from specchat.settings_checks import SettingsError
from tests.mcp_host.conftest import kill_echo_servers

WAIT_S = 120.0  # generous: a cold Python start of the server plus the SDK import


def wait_for(predicate, timeout: float = WAIT_S) -> bool:
    done = threading.Event()
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return True
        done.wait(0.05)
    return predicate()


@pytest.fixture
def host(echo_command):
    said: list[str] = []
    made = McpHost([ServerSpec("echo", echo_command)], on_error=said.append, connect_timeout=WAIT_S, watch_s=0.2)
    made.said = said
    yield made
    made.close()


def test_the_host_lists_the_tool_and_calls_it(host):
    tools = host.tools(timeout=WAIT_S)
    assert [(t.server, t.name) for t in tools] == [("echo", "add")]
    assert tools[0].input_schema["properties"].keys() == {"a", "b"}
    spec = tools[0].function_spec()
    assert spec["type"] == "function" and spec["function"]["name"] == "add"
    assert spec["function"]["parameters"]["required"] == ["a", "b"]
    assert host.call("add", {"a": 2, "b": 3}) == ToolResult("5")
    assert host.call("nope", {}).is_error
    [status] = host.statuses()
    assert (status.state, status.tool_count) == ("ready", 1) and status.describe() == "ready, 1 tool"
    assert host.said == []


def test_calls_from_many_threads_at_once(host):
    host.wait_ready(WAIT_S)
    results: dict[int, ToolResult] = {}
    threads = [
        threading.Thread(target=lambda i=i: results.__setitem__(i, host.call("add", {"a": i, "b": 1})))
        for i in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert {i: r.text for i, r in results.items()} == {i: str(i + 1) for i in range(4)}


def test_a_server_that_dies_is_said_once_and_the_host_survives(host):
    assert host.call("add", {"a": 1, "b": 1}).text == "2"
    assert kill_echo_servers() == 1
    assert wait_for(lambda: host.statuses()[0].state == "failed")
    result = host.call("add", {"a": 1, "b": 1})
    assert result.is_error
    assert host.tools(timeout=1) == []
    assert len(host.said) == 1 and "echo" in host.said[0]
    assert host.errors == host.said


def test_a_server_that_fails_to_start_is_said_once_and_the_others_go_on(echo_command):
    said: list[str] = []
    host = McpHost(
        [ServerSpec("missing", "/nonexistent/mcp-server --flag"), ServerSpec("echo", echo_command)],
        on_error=said.append,
        connect_timeout=WAIT_S,
    )
    try:
        assert [t.name for t in host.tools(timeout=WAIT_S)] == ["add"]
        assert host.call("add", {"a": 2, "b": 2}).text == "4"
        host.tools(timeout=1)
        assert len(said) == 1 and "missing" in said[0] and "could not start" in said[0]
        states = {s.name: s.state for s in host.statuses()}
        assert states == {"missing": "failed", "echo": "ready"}
    finally:
        host.close()
    assert host.tools() == [] and host.call("add", {"a": 1, "b": 1}).is_error


def test_a_host_without_servers_offers_nothing_and_starts_nothing():
    host = McpHost([])
    assert host.tools() == [] and host.statuses() == []
    host.close()


def test_specs_round_trip_and_name_their_transport():
    spec = ServerSpec.from_dict({"name": "a", "command": "run 'my server' --x", "always_allow": ["add"]})
    assert spec.argv() == ["run", "my server", "--x"] and spec.transport == "stdio"
    assert ServerSpec.from_dict(spec.to_dict()) == spec
    assert ServerSpec("b", url="http://localhost:9/mcp").transport == "http"
    assert ServerSpec("c", url="http://localhost:9/sse").transport == "sse"


def test_the_policy_allows_only_what_the_user_always_allowed():
    specs = [ServerSpec("echo", "x", always_allow=("add",)), ServerSpec("other", "y")]
    policy = ApprovalPolicy(specs)
    assert policy.allowed("echo", "add") and not policy.allowed("other", "add")
    policy.allow_always("other", "sub")
    assert [s.always_allow for s in policy.saved_into(specs)] == [("add",), ("sub",)]


def test_the_round_trip_messages():
    turn = assistant_message("Let me add.", [("call_1", "add", '{"a": 2, "b": 3}')])
    assert turn["tool_calls"][0]["function"] == {"name": "add", "arguments": {"a": 2, "b": 3}}
    assert tool_message("call_1", "add", "5") == {
        "role": "tool",
        "tool_call_id": "call_1",
        "name": "add",
        "content": "5",
    }
    assert "declined" in declined_message("call_1", "add")["content"]


def test_settings_keep_mcp_servers_and_refuse_bad_ones():
    good = [{"name": "echo", "command": "python s.py", "always_allow": ["add"]}, {"name": "web", "url": "http://h/mcp"}]
    assert settings_from_dict({"mcp_servers": good}).mcp_servers[1] == {
        "name": "web",
        "url": "http://h/mcp",
        "always_allow": [],
    }
    for bad in (
        [{"name": "x"}],
        [{"name": "x", "command": "a", "url": "http://h"}],
        [{"name": "", "command": "a"}],
        [{"name": "x", "command": "a"}, {"name": "x", "command": "b"}],
        [{"name": "x", "command": "a", "always_allow": "add"}],
        "echo",
    ):
        with pytest.raises(SettingsError):
            settings_from_dict({"mcp_servers": bad})


def test_the_reply_job_gives_the_tools_to_the_chat_template():
    from specchat.engine.owner.engine_jobs import reply_job

    seen = {}

    class Tokenizer:
        def apply_chat_template(self, messages, add_generation_prompt=True, **kwargs):
            seen.setdefault("tools", []).append(kwargs.get("tools"))
            return [1, 2, 3] + ([4] if kwargs.get("tools") else [])

    class Engine:
        tokenizer = Tokenizer()

        def stream(self, ids, cfg, cancel):
            seen["ids"] = ids
            yield from ()

    class Ctx:
        engine, cancel = Engine(), threading.Event()

    spec = {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}
    list(reply_job([{"role": "user", "content": "2+3?"}], cfg=None, tools=[spec])(Ctx()))
    assert seen["ids"] == [1, 2, 3, 4] and seen["tools"][-1] == [spec]


@pytest.mark.parametrize(("flag", "path"), [("--http", "/mcp"), ("--sse", "/sse")])
def test_a_server_by_url_over_loopback(flag, path):
    import socket
    import subprocess
    import sys

    from tests.mcp_host.conftest import ECHO_SERVER

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, str(ECHO_SERVER), flag, str(port)], stderr=subprocess.DEVNULL)

    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return process.poll() is not None  # it exited: the asserts below say so
        return True

    host = McpHost([ServerSpec("web", url=f"http://127.0.0.1:{port}{path}")], connect_timeout=WAIT_S)
    try:
        assert wait_for(listening) and process.poll() is None
        assert host.servers[0].transport == ("http" if flag == "--http" else "sse")
        assert [t.name for t in host.tools(timeout=WAIT_S)] == ["add"], host.errors
        assert host.call("add", {"a": 2.5, "b": 3}).text == "5.5"
    finally:
        host.close()
        process.kill()
        process.wait(WAIT_S)
