"""The Server menu: serve the loaded pair on localhost from the app, and use a server as the engine."""

import httpx
import pytest
from openai import OpenAI

from specchat.engine import Finished, GenerationConfig
from specchat.server.app import ServerOptions
from specchat.server.backend import EngineBackend
from specchat.server.remote import RemoteEngine
from specchat.server.running import BackgroundServer, free_port
from specchat.ui.server_menu import ServeChoice

from .conftest import send


@pytest.mark.slow
def test_serving_from_the_app_answers_clients_and_shows_requests(qtbot, open_window, dense_target, dense_draft_partial):
    window = open_window(dense_target, dense_draft_partial)
    port = free_port()
    assert window.server.serve(ServeChoice(port, "k3y"))
    assert window.server.menu.serve_action.isChecked()
    assert window.server.label.text() == f"API http://127.0.0.1:{port}/v1 · 0 requests"
    client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k3y", max_retries=0, timeout=60)
    rounds_before = len(window.docks.dashboard.rounds)
    reply = client.chat.completions.create(
        model="dense_target", messages=[{"role": "user", "content": "hi"}], max_tokens=12
    )
    assert reply.usage.model_extra["speculation"]["mode"] == window.speculation.checked_mode()
    qtbot.waitUntil(lambda: window.server.label.text().endswith("· 1 request"), timeout=300_000)
    dash = window.docks.dashboard
    qtbot.waitUntil(lambda: len(dash.rounds) > rounds_before, timeout=300_000)
    qtbot.waitUntil(lambda: dash.status.text().startswith("Last API request #"), timeout=300_000)
    dash.redraw()
    assert dash.tiles["speed"].sub.text().startswith("last API request #")  # never passed off as a chat reply
    assert httpx.get(f"http://127.0.0.1:{port}/v1/models").status_code == 401  # the key is enforced
    send(qtbot, window, "And the chat still works")  # chat replies and API requests share the queue
    qtbot.waitUntil(lambda: dash.status.text().startswith("Last chat reply: "), timeout=300_000)
    dash.redraw()
    assert dash.tiles["speed"].sub.text().startswith("last chat reply (")
    window.server.menu.serve_action.setChecked(False)
    assert not window.server.controller.running and not window.server.label.isVisible()


def test_a_port_in_use_says_so_and_unticks_the_menu(qtbot, open_window, dense_target):
    window = open_window(dense_target)
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert not window.server.serve(ServeChoice(busy.getsockname()[1], None))
    assert not window.server.menu.serve_action.isChecked()
    assert "could not start" in window.banner.label.text()


@pytest.mark.slow
def test_connect_to_server_runs_the_chat_on_it(qtbot, open_window, dense_target, dense_draft_partial, paths):
    from specchat.engine.owner import EngineHost, load_pair_job

    host = EngineHost()
    host.submit("load", load_pair_job(dense_target, dense_draft_partial)).result(timeout=60)
    server = BackgroundServer(
        EngineBackend(host), ServerOptions(GenerationConfig(max_tokens=16), "remote-key"), port=free_port()
    )
    server.start()
    try:
        window = open_window(dense_target)
        saved_target = window.settings.target_path
        with qtbot.waitSignal(window.client.loaded, timeout=120_000):
            window.server.connect_to(server.url, "remote-key")
        assert window.pair.remote == server.url and window.pair.draft  # the server's pair, draft included
        assert f"on {server.url}" in window.model_bar.state.text()
        assert window.speculation.mode_actions["draft"].isEnabled()
        assert window.settings.target_path == saved_target  # the local pair stays the one to reload
        served = server.backend.requests_served
        finished = send(qtbot, window, "Hello there")
        assert isinstance(finished, Finished) and finished.tokens
        assert server.backend.requests_served > served  # the reply (and the dashboard's measurement) ran there
        assert window.server.menu.local_action.isEnabled()
        cluster = window.docks.dashboard.cluster  # a cluster's status names each rank's memory
        server.backend.extra_status = lambda: {
            "cluster": {
                "degraded_reason": None,
                "ranks": [
                    {
                        "rank": 0,
                        "host": "mac-a",
                        "active_memory_bytes": 2_100_000_000,
                        "peak_memory_bytes": 2_300_000_000,
                    },
                    {
                        "rank": 1,
                        "host": "mac-b",
                        "active_memory_bytes": 2_000_000_000,
                        "peak_memory_bytes": 2_200_000_000,
                    },
                ],
            }
        }
        window.server.poller.poll()
        qtbot.waitUntil(lambda: "rank 1 (mac-b): 2.0 GB, peak 2.2 GB" in cluster.text(), timeout=300_000)
        assert cluster.isVisibleTo(window.docks.dashboard) and "rank 0 (mac-a): 2.1 GB" in cluster.text()
        with qtbot.waitSignal(window.client.loaded, timeout=300_000):
            window.server.menu.local_action.trigger()
        assert window.pair.remote is None and not cluster.isVisibleTo(window.docks.dashboard)
    finally:
        server.stop()
        host.shutdown()


@pytest.mark.slow
def test_the_apps_server_speaks_tools_structured_output_and_anthropic(qtbot, open_window, dense_target):
    import json

    from anthropic import Anthropic

    window = open_window(dense_target)
    port = free_port()
    assert window.server.serve(ServeChoice(port, None))
    url = f"http://127.0.0.1:{port}"
    client = OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=120)
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 9}}, "required": ["n"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "n", "schema": schema, "strict": True}}
    reply = client.chat.completions.create(
        model="dense_target", messages=[{"role": "user", "content": "n?"}], response_format=fmt, max_tokens=40
    )
    assert 0 <= json.loads(reply.choices[0].message.content)["n"] <= 9
    no_args = {"type": "object", "properties": {}, "additionalProperties": False}
    tool = {"type": "function", "function": {"name": "ping", "parameters": no_args}}
    called = client.chat.completions.create(
        model="dense_target",
        messages=[{"role": "user", "content": "ping"}],
        tools=[tool],
        tool_choice="required",
        max_tokens=80,
    )
    assert called.choices[0].message.tool_calls, (called.choices[0].message, called.choices[0].finish_reason)
    assert called.choices[0].message.tool_calls[0].function.name == "ping"
    claude = Anthropic(base_url=url, api_key="none", max_retries=0, timeout=120)
    message = claude.messages.create(model="dense_target", max_tokens=6, messages=[{"role": "user", "content": "hi"}])
    assert message.type == "message" and message.usage.output_tokens > 0
    window.server.menu.serve_action.setChecked(False)


@pytest.mark.slow
def test_while_serving_a_chat_reply_shares_the_batch_with_an_api_request(
    qtbot, open_window, dense_target, dense_draft_partial
):
    import threading

    window = open_window(dense_target, dense_draft_partial)
    port = free_port()
    assert window.server.serve(ServeChoice(port, None))
    host = window.client.host
    gate = threading.Event()
    window.client.submit("hold", lambda ctx: gate.wait(300))  # both requests queue behind it, then meet
    api = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0, timeout=300)
    replies = []
    messages = [{"role": "user", "content": "Tell me about the sea"}]
    caller = threading.Thread(
        target=lambda: replies.append(
            api.chat.completions.create(model="dense_target", messages=messages, max_tokens=24)
        )
    )
    caller.start()
    qtbot.waitUntil(lambda: len(host.state().queued) == 1, timeout=300_000)
    with qtbot.waitSignal(window.chat.replyFinished, timeout=300_000) as finished:
        window.composer.text.setPlainText("And a word from the chat")
        window.composer.send_button.click()
        qtbot.waitUntil(lambda: len(host.state().queued) == 2, timeout=300_000)
        gate.set()
    caller.join(300)
    assert finished.args[0].stats.batch_rows_max == 2  # the chat reply ran in the API request's batch
    assert replies and replies[0].usage.model_extra["speculation"]["batch_rows_max"] == 2
    window.server.menu.serve_action.setChecked(False)
    assert window.client.batch_rows == 1  # not serving: the chat runs alone again


class ScriptedServer(RemoteEngine):
    """A connected server whose status answers are given in advance (no HTTP); the last one repeats."""

    def __init__(self, *answers):
        self.url = "http://studio.local:8080"
        self.answers = list(answers)

    def get(self, path):
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_a_malformed_server_status_is_said_once_and_polling_goes_on(qtbot, open_window, caplog):
    window = open_window()
    good = {
        "target": "t",
        "cluster": {"ranks": [{"rank": 1, "host": "studio-2", "active_memory_bytes": 2_000_000_000}]},
    }
    server = ScriptedServer({"cluster": {"ranks": [{"host": "studio-2"}]}}, ["not", "a", "status"], good)
    poller = window.server.poller
    poller.timer.setInterval(20)
    with caplog.at_level("WARNING", logger="specchat.ui.server_link"):
        poller.follow(server)
        qtbot.waitUntil(lambda: "rank 1 (studio-2): 2.0 GB" in window.docks.dashboard.cluster.text(), timeout=30_000)
    poller.follow(None)
    said = [r.getMessage() for r in caplog.records if "status could not be read" in r.getMessage()]
    assert len(said) == 1 and "KeyError" in said[0]
