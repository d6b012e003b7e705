"""Stopping `serve` (SIGTERM, Ctrl-C) while requests are open: each ends with a clear error, the process exits."""

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from specchat.engine.events import TextChunk
from specchat.paths import AppPaths
from specchat.server.app import ServerOptions
from specchat.server.backend import EngineBackend
from specchat.server.request_log import REQUEST_LOG_NAME
from specchat.server.running import BackgroundServer, free_port

from .conftest import DEFAULTS

ROOT = Path(__file__).resolve().parents[2]
CHAT = {"messages": [{"role": "user", "content": "Tell me a long story."}], "max_tokens": 20000}


def start_serve(target: Path, draft: Path, port: int, *serve_args: str, before: str = "") -> subprocess.Popen:
    """`python -m specchat serve` in its own session (so Ctrl-C's SIGINT reaches it), once it listens;
    `before`: Python run first in that process (a test's patch), then the command line as `specchat`'s."""
    launch = (
        ["-m", "specchat"]
        if not before
        else ["-c", f"{before}\nimport sys\nfrom specchat.cli import main\nsys.exit(main())"]
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            *launch,
            "serve",
            "--target",
            str(target),
            "--draft",
            str(draft),
            "--port",
            str(port),
            *serve_args,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    line = proc.stdout.readline()  # "Serving ..." once the model is loaded
    assert line.startswith("Serving"), line + proc.stderr.read()
    for _ in range(200):
        try:
            httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5)
            return proc
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError("serve printed Serving but does not answer")


def stream_lines(url: str, first_chunk: threading.Event, lines: list[str]) -> None:
    with httpx.Client(timeout=120) as client:
        with client.stream("POST", url, json={**CHAT, "stream": True}) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    lines.append(line[6:])
                    first_chunk.set()


def wait_for_jobs(base: str, count: int) -> None:
    """Until the engine holds `count` requests, running (a batch's rows) or queued."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        state = httpx.get(base + "/specchat/v1/status", timeout=10).json()
        if len(state["running_batch"]) + len(state["queued"]) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"the engine never held {count} requests: {state}")


@pytest.mark.parametrize(
    "stop,batch",
    [  # each case starts its own `serve` process: the fast subset (-m "not slow") keeps SIGTERM on a batch
        pytest.param(
            stop,
            batch,
            id=f"{int(stop)}-{name}",
            marks=() if (stop, batch) == (signal.SIGTERM, "8") else pytest.mark.slow,
        )
        for stop in (signal.SIGTERM, signal.SIGINT)
        for batch, name in (("8", "batched"), ("1", "queued"))
    ],
)
@pytest.mark.slow
def test_stopping_the_server_ends_every_open_request_with_an_error(stop, batch, dense_target, dense_draft_partial):
    port = free_port()
    proc = start_serve(dense_target, dense_draft_partial, port, "--max-batch", batch)
    base = f"http://127.0.0.1:{port}"
    first_chunk, lines, whole = threading.Event(), [], {}
    streamer = threading.Thread(target=stream_lines, args=(base + "/v1/chat/completions", first_chunk, lines))
    streamer.start()
    assert first_chunk.wait(60), "the stream never started"
    waiter = threading.Thread(
        target=lambda: whole.update(r=httpx.post(base + "/v1/chat/completions", json=CHAT, timeout=120))
    )
    waiter.start()  # a second row of the batch, or queued behind the stream
    wait_for_jobs(base, 2)
    proc.send_signal(stop)
    out, err = proc.communicate(timeout=60)  # many times the 0.2 s it takes here
    streamer.join(30)
    waiter.join(30)
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert_ended_by_shutdown(lines, whole["r"])
    logged = [json.loads(line) for line in request_log_path().read_text().splitlines()]
    assert sorted(r["status"] for r in logged if r["route"] == "/v1/chat/completions") == [200, 503], logged


def request_log_path() -> Path:
    """The request log `serve` writes (under the test's SPECCHAT_HOME, which the process inherits)."""
    return AppPaths.default().log_dir / REQUEST_LOG_NAME


def assert_ended_by_shutdown(lines: list[str], whole: httpx.Response) -> None:
    """The stream's last chunks are the shutdown error and [DONE]; the whole request got a 503 saying so."""
    assert lines[-1] == "[DONE]", lines[-3:]
    error = json.loads(lines[-2])["error"]
    assert error["code"] == "server_shutting_down" and "shutting down" in error["message"]
    assert whole.status_code == 503 and whole.json()["error"]["code"] == "server_shutting_down"


class StuckBackend(EngineBackend):
    """Every job streams one piece and then holds the engine thread until released, deaf to cancel:
    an engine inside a long prefill chunk when the server stops."""

    def __init__(self, host, release: threading.Event):
        super().__init__(host, max_queue=8, max_batch=1)
        self.release = release

    def generation_work(self, prompt_ids, cfg):
        def work(ctx):
            ctx.emit(TextChunk("Once", (0,), (False,)))
            self.release.wait(120)

        return work


def test_a_stop_while_the_engine_is_stuck_still_ends_every_request_with_its_error(host):
    release = threading.Event()
    backend = StuckBackend(host, release)
    server = BackgroundServer(backend, ServerOptions(DEFAULTS), port=free_port())
    server.start()
    first_chunk, lines, whole = threading.Event(), [], {}
    url = server.url + "/v1/chat/completions"
    streamer = threading.Thread(target=stream_lines, args=(url, first_chunk, lines))
    waiter = threading.Thread(target=lambda: whole.update(r=httpx.post(url, json=CHAT, timeout=120)))
    try:
        streamer.start()
        assert first_chunk.wait(60), "the stream never started"
        waiter.start()
        wait_for_jobs(server.url, 2)
        server.stop(timeout_s=30)
        streamer.join(30)
        waiter.join(30)
        assert not release.is_set()  # the engine never saw the stop: the server said it on its own
        assert_ended_by_shutdown(lines, whole["r"])
    finally:
        release.set()


@pytest.mark.slow  # a `serve` process of its own; test_a_second_stop_signal_on_the_server_stops_at_once is the quick check
def test_a_second_ctrl_c_while_the_server_stops_exits_at_once_in_one_line(dense_target, dense_draft_partial):
    port = free_port()
    # the stop's grace for open connections made long, and a client holding one open with half a request:
    # the first Ctrl-C's stop is still under way whenever the second one comes, however loaded the machine
    grace = "import specchat.server.running as running\nrunning.SHUTDOWN_GRACE_S = 300"
    proc = start_serve(dense_target, dense_draft_partial, port, "--max-batch", "8", before=grace)
    base = f"http://127.0.0.1:{port}"
    first_chunk, lines = threading.Event(), []
    streamer = threading.Thread(target=stream_lines, args=(base + "/v1/chat/completions", first_chunk, lines))
    streamer.start()
    half = socket.create_connection(("127.0.0.1", port), timeout=60)
    try:
        assert first_chunk.wait(60), "the stream never started"
        half.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
        half.sendall(b"Content-Length: 1000\r\n\r\n{")  # the rest never comes
        proc.send_signal(signal.SIGINT)
        streamer.join(60)  # the first Ctrl-C was handled: the stream ended as on SIGTERM
        assert lines[-1] == "[DONE]" and json.loads(lines[-2])["error"]["code"] == "server_shutting_down"
        assert proc.poll() is None  # still stopping: the half request holds its connection open
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        half.close()
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines() == ["specchat serve: Ctrl-C again: stopped at once"], err


def test_a_second_stop_signal_on_the_server_stops_at_once(monkeypatch, capsys):
    """The serving server counts stop signals: the first stops it gracefully, the second ends the process."""
    import uvicorn

    from specchat.server import running

    class Backend:
        stops = 0

        def begin_shutdown(self):
            self.stops += 1

    backend, seen = Backend(), []
    # uvicorn's own handle_exit, as sse-starlette patches it, ends every SSE stream of this process: stubbed
    monkeypatch.setattr(uvicorn.Server, "handle_exit", lambda self, sig, frame: seen.append(sig))
    server = running.ServingServer(uvicorn.Config(app=None), backend)
    server.handle_exit(signal.SIGTERM, None)
    assert seen == [signal.SIGTERM] and backend.stops == 1
    exits = []
    monkeypatch.setattr(running.os, "_exit", exits.append)
    server.handle_exit(signal.SIGINT, None)
    assert exits == [130]
    assert capsys.readouterr().err == "specchat serve: Ctrl-C again: stopped at once\n"
