"""Start `mlx.launch --backend ring -n 2` runs for the cluster tests (own session, always cleaned up)."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
MLX_LAUNCH = Path(sys.executable).with_name("mlx.launch")
# Below Linux's and macOS's ephemeral ranges, where outgoing connections (and bind to port 0) take ports.
RING_PORTS = range(20000, 30000)
BIND_FAILED = "Couldn't bind socket"  # what a rank prints when its ring port was taken after all
LAUNCH_TRIES = 3


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def ring_port() -> int:
    """A starting port for the ring: rank 0 binds it and rank 1 the next one, so both must be free."""
    while True:
        port = random.randrange(RING_PORTS.start, RING_PORTS.stop - 1)
        if _bindable(port) and _bindable(port + 1):
            return port


def launch_args(*command: str) -> list[str]:
    """mlx.launch with 2 ranks on this machine running `python ...command` (ring ports picked free)."""
    return [
        str(MLX_LAUNCH),
        "--backend",
        "ring",
        "-n",
        "2",
        "--starting-port",
        str(ring_port()),
        "--python",
        sys.executable,
        "--",
        *command,
    ]


def run_ranks(args: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    """Run to the end (killed after timeout_s), on other ports if a ring port was taken meanwhile."""
    for _ in range(LAUNCH_TRIES - 1):
        done = _run_once(args, timeout_s)
        if BIND_FAILED not in done.stdout:  # mlx.launch exits 0 even then, so the output tells
            return done
    return _run_once(args, timeout_s)


def _run_once(args: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    """One launch, run to the end (killed after timeout_s); its output kept for the assertion message."""
    proc = subprocess.Popen(
        launch_args(*args),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise AssertionError(f"mlx.launch ran past {timeout_s} s:\n{out[-3000:]}") from None
    return subprocess.CompletedProcess(args, proc.returncode, out, "")


class ClusterProcess:
    """`python -m specchat serve` under mlx.launch, on a port; stop() kills the whole session."""

    def __init__(self, port: int, *serve_args: str, log: Path):
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self._out = log.open("w")
        self.proc = subprocess.Popen(
            launch_args("-m", "specchat", "serve", "--port", str(port), *serve_args),
            cwd=ROOT,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def status(self) -> dict:
        """GET /specchat/v1/status."""
        return httpx.get(self.url + "/specchat/v1/status", timeout=10).json()

    def wait_ready(self, timeout_s: float) -> dict:
        """The status once the server answers; AssertionError with the log when it does not in time."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                return self.status()
            except httpx.HTTPError:
                time.sleep(0.3)
        raise AssertionError(f"the cluster did not serve within {timeout_s} s:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        """Kill every process of the launch (SIGCONT first: a stopped rank must be able to die)."""
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
        self.proc.wait(10)
        self._out.close()


@contextmanager
def dense_cluster(
    target: Path, draft: Path, log: Path, *serve_args: str, ready_s: float = 240.0
) -> Iterator[ClusterProcess]:
    """`serve` of a dense pair at K=2 sharded over 2 ranks (more `serve` arguments after), ready; stopped after."""
    process = _ready_cluster(
        ("--target", str(target), "--draft", str(draft), "--draft-tokens", "2", *serve_args), log, ready_s
    )
    try:
        yield process
    finally:
        process.stop()


def _ready_cluster(serve_args: tuple[str, ...], log: Path, ready_s: float) -> ClusterProcess:
    """A serving cluster, launched again on other ports if a ring port was taken meanwhile."""
    for _ in range(LAUNCH_TRIES - 1):
        try:
            return _launch_ready(serve_args, log, ready_s)
        except AssertionError:
            if BIND_FAILED not in log.read_text():
                raise
    return _launch_ready(serve_args, log, ready_s)


def _launch_ready(serve_args: tuple[str, ...], log: Path, ready_s: float) -> ClusterProcess:
    """One launch of `serve`, ready; stopped when it is not."""
    from specchat.server.running import free_port

    process = ClusterProcess(free_port(), *serve_args, log=log)
    try:
        process.wait_ready(ready_s)
    except AssertionError:
        process.stop()
        raise
    return process
