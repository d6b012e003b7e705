"""The chat as an MCP host: a reply's <tool_call> becomes a card; nothing runs before Approve; the real test
server's result goes back to the model as a tool message in a follow-up reply. The engine is scripted: the
client's generate() is recorded and the reply's Finished event is sent as the engine would."""

import pytest

from specchat.engine import Finished, GenerationStats
from specchat.settings import Settings, load_settings, save_settings
from specchat.ui.chat.tool_card import ToolCard
from tests.mcp_host.conftest import ECHO_COMMAND
from tests.ui.conftest import screenshot, send

WAIT_MS = 120_000
CALL = 'Let me add them.\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'


class ScriptedEngine:
    """Stands in for EngineClient.generate: records each reply job asked for; the test finishes it."""

    def __init__(self, window):
        self.window, self.jobs = window, []
        window.client.generate = self.generate

    def generate(self, messages, cfg, system_prompt="", enable_thinking=False, tools=()):
        self.jobs.append({"messages": messages, "tools": list(tools), "cfg": cfg})
        return 1000 + len(self.jobs)

    def reply(self, text: str) -> None:
        self.window.client.event.emit(1000 + len(self.jobs), Finished((), text, GenerationStats(), False))


@pytest.fixture
def mcp_window(open_window, paths, qtbot):
    save_settings(paths, Settings(mcp_servers=[{"name": "echo", "command": ECHO_COMMAND, "always_allow": []}]))
    window = open_window()
    tool_round = window.chat.tool_round
    host = tool_round.mcp()
    assert host is not None and host.wait_ready(WAIT_MS / 1000)
    calls = []
    real_call = host.call
    host.call = lambda name, arguments, timeout=None: calls.append((name, arguments)) or real_call(name, arguments)
    engine = ScriptedEngine(window)
    yield window, engine, calls
    window.close()


def ask_for_add(qtbot, window, engine) -> ToolCard:
    window.chat.send("What is 2 + 3?")
    assert len(engine.jobs) == 1
    [spec] = engine.jobs[0]["tools"]
    assert spec["function"]["name"] == "add"
    engine.reply(CALL)
    qtbot.waitUntil(lambda: len(window.findChildren(ToolCard)) == 1, timeout=WAIT_MS)
    [card] = window.findChildren(ToolCard)
    assert card.name == "add" and '"a": 2' in card.arguments.text()
    reply = window.chat.transcript.views[-1]
    assert reply.full_text() == "Let me add them." and "<tool_call" not in reply.full_text()  # the call is the card
    return card


@pytest.mark.slow
def test_approve_runs_the_tool_shows_five_and_continues_with_the_result(qtbot, mcp_window):
    window, engine, calls = mcp_window
    card = ask_for_add(qtbot, window, engine)
    assert calls == [] and len(engine.jobs) == 1  # nothing runs before the user says so
    assert not card.result.isVisible()
    card.approve_button.click()
    qtbot.waitUntil(lambda: len(engine.jobs) == 2, timeout=WAIT_MS)
    assert calls == [("add", {"a": 2, "b": 3})]
    assert card.result.text() == "5"
    messages = engine.jobs[1]["messages"]
    assert messages[0] == {"role": "user", "content": "What is 2 + 3?"}
    assert messages[1]["role"] == "assistant" and messages[1]["tool_calls"][0]["function"]["name"] == "add"
    call_id = messages[1]["tool_calls"][0]["id"]
    assert messages[2] == {"role": "tool", "tool_call_id": call_id, "name": "add", "content": "5"}
    assert engine.jobs[1]["tools"]  # the tools stay offered
    engine.reply("2 + 3 = 5.")
    qtbot.waitUntil(lambda: not window.chat.busy, timeout=WAIT_MS)
    screenshot(window, "mcp_tool_card")
    assert len(window.findChildren(ToolCard)) == 1 and len(engine.jobs) == 2


def test_deny_runs_nothing_and_tells_the_model_the_user_declined(qtbot, mcp_window):
    window, engine, calls = mcp_window
    card = ask_for_add(qtbot, window, engine)
    card.deny_button.click()
    qtbot.waitUntil(lambda: len(engine.jobs) == 2, timeout=WAIT_MS)
    assert calls == []
    tool = engine.jobs[1]["messages"][2]
    assert tool["role"] == "tool" and tool["name"] == "add" and "declined" in tool["content"]
    assert "Declined" in card.status.text()


@pytest.mark.slow
def test_always_allow_runs_it_and_saves_it_so_the_next_call_asks_nothing(qtbot, mcp_window, paths):
    window, engine, calls = mcp_window
    card = ask_for_add(qtbot, window, engine)
    card.always_button.click()
    qtbot.waitUntil(lambda: len(engine.jobs) == 2, timeout=WAIT_MS)
    assert calls == [("add", {"a": 2, "b": 3})]
    assert load_settings(paths).settings.mcp_servers[0]["always_allow"] == ["add"]
    engine.reply(CALL)  # the model calls it again: it runs without a question
    qtbot.waitUntil(lambda: len(engine.jobs) == 3, timeout=WAIT_MS)
    assert len(calls) == 2
    second = window.findChildren(ToolCard)[-1]
    assert second.result.text() == "5" and not second.buttons.isVisible()


@pytest.mark.slow
def test_a_server_that_cannot_start_is_said_once_and_preferences_show_each_server(qtbot, open_window, paths):
    servers = [
        {"name": "echo", "command": ECHO_COMMAND, "always_allow": []},
        {"name": "missing", "command": "/nonexistent/mcp-server", "always_allow": []},
    ]
    save_settings(paths, Settings(mcp_servers=servers))
    window = open_window()
    said = []
    window.chat.tool_round.serverFailed.connect(said.append)
    host = window.chat.tool_round.mcp()
    assert host is not None and host.wait_ready(WAIT_MS / 1000)
    qtbot.waitUntil(lambda: "missing" in window.banner.message, timeout=WAIT_MS)
    assert window.banner.level == "warning" and "could not start" in window.banner.message
    assert [t.name for t in host.tools()] == ["add"]  # the other server goes on
    dialog = window.preferences.open()
    lines = [dialog.mcp_list.item(i).text() for i in range(dialog.mcp_list.count())]
    assert lines[0].startswith("echo") and lines[0].endswith("ready, 1 tool")
    assert lines[1].startswith("missing") and "failed" in lines[1]
    dialog.mcp_name.setText("web")
    dialog.mcp_where.setText("http://localhost:1/mcp")
    dialog.mcp_add.click()
    dialog.mcp_name.setText("web")
    dialog.mcp_where.setText("other")
    dialog.mcp_add.click()
    assert dialog.mcp_problem.isVisibleTo(dialog) and dialog.mcp_list.count() == 3  # names are unique
    dialog.mcp_list.setCurrentRow(1)
    dialog.mcp_remove.click()
    dialog.accept()
    assert [s["name"] for s in window.settings.mcp_servers] == ["echo", "web"]
    assert window.settings.mcp_servers[1]["url"] == "http://localhost:1/mcp"
    assert [s["name"] for s in load_settings(paths).settings.mcp_servers] == ["echo", "web"]
    assert len([m for m in said if "missing" in m]) <= 1
    window.close()


@pytest.mark.slow
def test_a_real_pair_speculates_with_the_tools_offered_and_continues_after_a_call(
    qtbot, open_window, paths, dense_target, dense_draft_partial
):
    save_settings(paths, Settings(mcp_servers=[{"name": "echo", "command": ECHO_COMMAND, "always_allow": []}]))
    window = open_window(dense_target, dense_draft_partial)
    host = window.chat.tool_round.mcp()
    assert host is not None and host.wait_ready(WAIT_MS / 1000)
    jobs = []
    real_generate = window.client.generate

    def generate(messages, cfg, system_prompt="", enable_thinking=False, tools=()):
        jobs.append((messages, list(tools), cfg))
        return real_generate(messages, cfg, system_prompt, enable_thinking, tools=tools)

    window.client.generate = generate
    failed = []
    window.chat.replyFailed.connect(failed.append)
    finished = send(qtbot, window, "Add two and three.")
    assert finished.stats.mode == "draft" and jobs[0][1][0]["function"]["name"] == "add"
    # the tiny model writes no call of its own: its reply is read as if it had written one
    active_id = window.chat.store.messages(window.chat.conversation_id)[-1].id
    assert window.chat.tool_round.reply_finished(window.chat.conversation_id, active_id, CALL)
    [card] = window.findChildren(ToolCard)
    with qtbot.waitSignal(window.chat.replyFinished, timeout=WAIT_MS) as blocker:
        card.approve_button.click()
    assert failed == [] and not blocker.args[0].cancelled
    assert blocker.args[0].stats.mode == "draft"  # speculation stays on with tools in the prompt
    messages = jobs[1][0]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"] and messages[2]["content"] == "5"
    window.close()
