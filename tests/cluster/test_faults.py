"""A served cluster (2 ring ranks on localhost): requests, and a rank that stalls or dies mid-reply."""

import os
import signal
import time
from pathlib import Path

import openai
import pytest

from specchat.engine.config import GenerationConfig
from specchat.engine.engine import Engine
from specchat.server.remote import RemoteEngine

from .launch import dense_cluster

RANK_TIMEOUT_S = 3.0
PROMPT = [5, 6, 7, 8, 9, 10, 11, 12]


@pytest.fixture
def cluster(dense_target, dense_draft_partial, tmp_path):
    """`serve` sharded over 2 ranks, with a short rank timeout and heartbeat."""
    with dense_cluster(
        dense_target,
        dense_draft_partial,
        tmp_path / "serve.log",
        "--rank-timeout",
        str(RANK_TIMEOUT_S),
        "--heartbeat",
        "1",
    ) as process:
        yield process


def test_rank_0_says_what_each_rank_needs_before_it_loads(cluster, tmp_path):
    # mlx.launch relays rank 0's output through a pipe: the "Serving" line can reach the log after the
    # server already answers
    wait_until(lambda: "Serving" in (tmp_path / "serve.log").read_text(), "no Serving line in the log")
    log = (tmp_path / "serve.log").read_text()
    line = next(line for line in log.splitlines() if line.startswith("Memory per rank"))
    assert "1/2 of the target" in line and "at 8192 tokens" in line and "target weights" in line
    assert log.index("Memory per rank") < log.index("Serving")


def client(cluster):
    return openai.OpenAI(base_url=cluster.url + "/v1", api_key="none", max_retries=0, timeout=60)


def stream_until_fault(cluster, stop_rank_1) -> tuple[list[str], Exception]:
    """Stream a long reply; after its first chunk run stop_rank_1(pid); the text and the error."""
    pid = cluster.status()["cluster"]["ranks"][1]["pid"]
    chunks = []
    with pytest.raises(openai.APIError) as caught:
        stream = client(cluster).completions.create(model="dense_target", prompt=PROMPT, max_tokens=20000, stream=True)
        for chunk in stream:
            chunks.append(chunk.choices[0].text)
            if len(chunks) == 1:
                stop_rank_1(pid)
    return chunks, caught.value


def assert_degraded(cluster, reason_part: str) -> None:
    """The next request gets 503 'cluster degraded' and the status says why and how to restart."""
    with pytest.raises(openai.APIStatusError) as refused:
        client(cluster).completions.create(model="dense_target", prompt=PROMPT, max_tokens=4)
    assert refused.value.status_code == 503
    assert "cluster degraded" in str(refused.value) and "Restart it" in str(refused.value)
    info = cluster.status()["cluster"]
    assert info["degraded"] is True and reason_part in info["degraded_reason"]
    assert "mlx.launch" in info["restart"]


def test_requests_match_one_process_and_status_lists_ranks(cluster, dense_target, dense_draft_partial):
    status = cluster.status()
    ranks = status["cluster"]["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1] and status["cluster"]["degraded"] is False
    assert all(r["active_memory_bytes"] > 0 and r["pid"] > 0 for r in ranks)
    remote = RemoteEngine(cluster.url).status()  # what the app's "Connect to server" sees
    assert [r.rank for r in remote.ranks] == [0, 1] and remote.degraded is None
    assert remote.ranks[1].active_bytes == ranks[1]["active_memory_bytes"]
    assert remote.ranks[1].label().startswith(f"rank 1 ({ranks[1]['host']}): ")
    local = Engine.load(dense_target, dense_draft_partial)
    for mode in ("baseline", "draft"):
        expected = local.generate(PROMPT, GenerationConfig(mode=mode, num_draft_tokens=2, max_tokens=16))
        reply = client(cluster).completions.create(
            model="dense_target", prompt=PROMPT, max_tokens=16, extra_body={"speculation": {"mode": mode}}
        )
        assert reply.choices[0].text == expected.text
        assert reply.usage.completion_tokens == 16


def test_a_stalled_rank_fails_the_reply_within_the_bound(cluster):
    chunks, error = stream_until_fault(cluster, lambda pid: os.kill(pid, signal.SIGSTOP))
    assert chunks
    assert "rank 1 on host" in str(error) and f"did not answer within {RANK_TIMEOUT_S:g} s" in str(error)
    # the rank timeout, not the test's own patience, ended it: the error names the bound (no wall-clock assert)
    assert_degraded(cluster, "did not answer")


def test_a_killed_rank_fails_the_reply_and_the_server_stays_up(cluster):
    chunks, error = stream_until_fault(cluster, lambda pid: os.kill(pid, signal.SIGKILL))
    assert chunks
    # the ring backend reports the lost peer, or the collective never completes and the rank timeout says so
    assert "rank 1 on host" in str(error), (str(error), cluster.log.read_text()[-2000:])
    assert "lost the link" in str(error) or "did not answer" in str(error)
    # mlx.launch answers a dead rank with SIGTERM to the others, then waits on them: rank 0 checks the ranks
    # and stays up (its own output reaches the log only once it exits: the launcher reads it no more)
    wait_until(lambda: launcher_waits_on_a_rank(cluster), "mlx.launch did not SIGTERM rank 0")
    wait_until(lambda: cluster.status()["cluster"]["kept_up_after_launcher_stop"], "rank 0 did not stay up")
    assert_degraded(cluster, "rank 1 on host")
    assert "rank 1 on host" in RemoteEngine(cluster.url).status().degraded  # "lost the link to" or "did not answer"
    # anyone else's SIGTERM (a user's kill, here this test's) stops it, and the launch ends
    os.kill(cluster.status()["cluster"]["ranks"][0]["pid"], signal.SIGTERM)
    cluster.proc.wait(60)
    log = cluster.log.read_text()
    assert "SIGTERM from the launcher while the cluster is degraded" in log, log[-2000:]
    assert f"SIGTERM from process {os.getpid()}: stopping" in log, log[-2000:]


def wait_until(done, message: str, timeout_s: float = 60.0) -> None:
    """Poll done() until it is true; AssertionError(message) when it is not in time."""
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert done(), message


def launcher_waits_on_a_rank(cluster) -> bool:
    """True once one of mlx.launch's threads blocks in wait(): it does so only after it sent SIGTERM to a
    rank (its terminate()); until then it polls (Linux: the thread's wait channel)."""
    channels = []
    for task in Path(f"/proc/{cluster.proc.pid}/task").iterdir():
        try:
            channels.append((task / "wchan").read_text())
        except OSError:  # the thread ended
            pass
    return "do_wait" in channels


def gone(pid: int) -> bool:
    """True once the process has exited (a zombie its parent has not reaped yet counts as gone)."""
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] == "Z"
    except (FileNotFoundError, IndexError):
        return True


@pytest.mark.parametrize("fault", [signal.SIGKILL, signal.SIGSTOP])
def test_ctrl_c_stops_rank_0_even_after_a_rank_died_mid_reply(cluster, fault):
    """SIGSTOP leaves rank 0's engine thread waiting in a collective for good: the exit must not wait on it."""
    stream_until_fault(cluster, lambda pid: os.kill(pid, fault))
    rank0 = cluster.status()["cluster"]["ranks"][0]["pid"]
    stopped_at = time.monotonic()
    os.kill(rank0, signal.SIGINT)
    while not gone(rank0) and time.monotonic() - stopped_at < 60:  # 0.6 s (killed peer), 1.6 s (stopped) here
        time.sleep(0.1)
    assert gone(rank0), "rank 0 ignored Ctrl-C after its peer died:\n" + cluster.log.read_text()[-2000:]
    assert "terminate called" not in cluster.log.read_text() and "Traceback" not in cluster.log.read_text()


def test_sigterm_with_every_rank_alive_stops_the_whole_cluster(cluster):
    os.kill(cluster.status()["cluster"]["ranks"][0]["pid"], signal.SIGTERM)
    assert cluster.proc.wait(30) == 0  # rank 0 told rank 1 to stop; both exited cleanly
    assert "exited with code" not in cluster.log.read_text()


def test_a_rank_lost_while_idle_shows_as_degraded_without_a_request(cluster):
    os.kill(cluster.status()["cluster"]["ranks"][1]["pid"], signal.SIGSTOP)
    deadline = time.monotonic() + 1 + RANK_TIMEOUT_S + 6  # one heartbeat, the bound, a loaded machine
    while not cluster.status()["cluster"]["degraded"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (
        cluster.status()["cluster"]["degraded_reason"] == f"rank 1 on host {os.uname().nodename} did not "
        f"answer within {RANK_TIMEOUT_S:g} s"
    )
    assert_degraded(cluster, "did not answer")
