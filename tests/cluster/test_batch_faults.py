"""A served cluster (2 ring ranks on localhost) decoding several streams in one batch when a rank dies or
stalls: every stream ends once with the cluster's error, and the server stays up, degraded (503)."""

import os
import signal
import threading
import time

import pytest

from .launch import dense_cluster
from .test_faults import RANK_TIMEOUT_S, assert_degraded, client

WAIT_S = 120.0  # generous: the machine may be busy; every wait below ends on an event
STREAMS = 3
PROMPTS = [[5, 6, 7, 8, 9, 10, 11, 12], [20, 21, 22, 23], [40, 41, 42, 43, 44, 45]]


@pytest.fixture
def cluster(dense_target, dense_draft_partial, tmp_path):
    """`serve` sharded over 2 ranks, batching up to 4 streams, with a short rank timeout."""
    with dense_cluster(
        dense_target,
        dense_draft_partial,
        tmp_path / "serve.log",
        "--max-batch",
        "4",
        "--rank-timeout",
        str(RANK_TIMEOUT_S),
        "--heartbeat",
        "1",
        ready_s=WAIT_S,
    ) as process:
        yield process


class Stream:
    """One long streamed completion on its own thread: its chunk count, and the error that ended it."""

    def __init__(self, cluster, prompt):
        self.cluster, self.prompt = cluster, prompt
        self.chunks, self.errors, self.finished = 0, [], False
        self.first = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            stream = client(self.cluster).completions.create(
                model="dense_target", prompt=self.prompt, max_tokens=20000, stream=True
            )
            for _ in stream:
                self.chunks += 1
                self.first.set()
            self.finished = True
        except Exception as exc:  # what the test checks
            self.errors.append(exc)
        self.first.set()


def wait_for(condition, what):
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.mark.parametrize("fault", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "stopped"])
def test_a_rank_lost_mid_batch_ends_every_stream_once_and_degrades(cluster, fault):
    pid = cluster.status()["cluster"]["ranks"][1]["pid"]
    streams = [Stream(cluster, prompt) for prompt in PROMPTS]
    for stream in streams:
        assert stream.first.wait(WAIT_S) and not stream.errors, stream.errors
    wait_for(lambda: len(cluster.status()["running_batch"]) == STREAMS, "the streams did not join one batch")
    os.kill(pid, fault)
    for stream in streams:
        stream.thread.join(WAIT_S)
        assert not stream.thread.is_alive() and not stream.finished
        assert len(stream.errors) == 1, stream.errors
        message = str(stream.errors[0])
        assert "rank 1 on host" in message, (message, cluster.log.read_text()[-2000:])
        assert "lost the link" in message or "did not answer" in message
    assert cluster.proc.poll() is None  # mlx.launch (and rank 0) still run
    assert_degraded(cluster, "rank 1 on host")
    assert "Traceback" not in cluster.log.read_text()
