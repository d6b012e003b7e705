"""Stopping `serve` (SIGTERM, Ctrl-C) while requests are open: each ends with a clear error, the process exits."""

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from specchat.server.running import free_port

ROOT = Path(__file__).resolve().parents[2]
CHAT = {"messages": [{"role": "user", "content": "Tell me a long story."}], "max_tokens": 20000}


def start_serve(target: Path, draft: Path, port: int) -> subprocess.Popen:
    """`python -m specchat serve` in its own session (so Ctrl-C's SIGINT reaches it), once it listens."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "specchat",
            "serve",
            "--target",
            str(target),
            "--draft",
            str(draft),
            "--port",
            str(port),
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


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_stopping_the_server_ends_every_open_request_with_an_error(stop, dense_target, dense_draft_partial):
    port = free_port()
    proc = start_serve(dense_target, dense_draft_partial, port)
    base = f"http://127.0.0.1:{port}"
    first_chunk, lines, whole = threading.Event(), [], {}
    streamer = threading.Thread(target=stream_lines, args=(base + "/v1/chat/completions", first_chunk, lines))
    streamer.start()
    assert first_chunk.wait(60), "the stream never started"
    waiter = threading.Thread(
        target=lambda: whole.update(r=httpx.post(base + "/v1/chat/completions", json=CHAT, timeout=120))
    )
    waiter.start()  # queued behind the stream
    for _ in range(400):
        if httpx.get(base + "/specchat/v1/status", timeout=10).json()["queued"]:
            break
        time.sleep(0.05)
    stopped_at = time.monotonic()
    proc.send_signal(stop)
    out, err = proc.communicate(timeout=60)
    took = time.monotonic() - stopped_at
    streamer.join(30)
    waiter.join(30)
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert lines[-1] == "[DONE]"
    error = json.loads(lines[-2])["error"]
    assert error["code"] == "server_shutting_down" and "shutting down" in error["message"]
    assert whole["r"].status_code == 503 and whole["r"].json()["error"]["code"] == "server_shutting_down"
    assert took < 30, f"serve took {took:.1f} s to exit"  # about 0.2 s here; generous for a loaded machine
