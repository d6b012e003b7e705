"""Rank 0 tells the launcher's SIGTERM (its parent's: mlx.launch stops every rank when one exits) from anyone
else's: the first leaves a degraded cluster up, the second stops it, degraded or not."""

import os
import signal
import subprocess
import sys
import threading
import types
from pathlib import Path

import httpx
import pytest
import uvicorn

from specchat.cluster.serve import ClusterServer
from specchat.cluster.sigterm import SENDER_KNOWN

CHILD = Path(__file__).with_name("sigterm_child.py")
ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 120.0  # generous: the machine may be busy; the waits end on the child's lines or its exit

pytestmark = pytest.mark.skipif(not SENDER_KNOWN, reason="sigwaitinfo (the sender's pid) is Linux's")


class Child:
    """sigterm_child.py, started by this test (its launcher): its stdout lines, read on a thread."""

    def __init__(self, health: str):
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD), health],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.errors: list[str] = []
        self.changed = threading.Condition()
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.errors), daemon=True).start()

    def _read(self, stream, into: list[str]) -> None:
        for line in stream:
            with self.changed:
                into.append(line.rstrip("\n"))
                self.changed.notify_all()

    def wait_for(self, into: list[str], start: str) -> str:
        """The first line starting with `start`; AssertionError with the output when none comes in time."""
        with self.changed:
            self.changed.wait_for(lambda: any(line.startswith(start) for line in into), WAIT_S)
        found = [line for line in into if line.startswith(start)]
        assert found, f"no {start!r} line: {self.lines} {self.errors}"
        return found[0]

    def answers(self, port: int) -> bool:
        return httpx.get(f"http://127.0.0.1:{port}/", timeout=30).text == "up"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)


@pytest.fixture
def degraded():
    child = Child("degraded")
    yield child
    child.stop()


def kill_from_a_sibling(pid: int) -> int:
    """SIGTERM to pid from another process (as a user's `kill` or a service manager); that process's pid."""
    sibling = subprocess.Popen([sys.executable, "-c", f"import os, signal; os.kill({pid}, signal.SIGTERM)"])
    assert sibling.wait(WAIT_S) == 0
    return sibling.pid


@pytest.mark.slow
def test_sigterm_is_held_by_every_thread_including_those_started_before(degraded):
    threads, blocked = (int(word) for word in degraded.wait_for(degraded.lines, "threads").split()[1::2])
    assert threads >= 2 and blocked == threads  # numpy's BLAS thread, the late thread, the main one
    assert degraded.lines.count("image") == 2  # the process ran itself again to hold SIGTERM everywhere


@pytest.mark.slow
def test_the_launchers_sigterm_leaves_a_degraded_rank_0_up(degraded):
    port = int(degraded.wait_for(degraded.lines, "serving").split()[1])
    os.kill(degraded.proc.pid, signal.SIGTERM)  # from its parent: the launcher
    told = degraded.wait_for(degraded.errors, "specchat serve: SIGTERM from the launcher")
    assert "rank 1 on host test is gone" in told and "staying up" in told
    assert degraded.answers(port) and degraded.proc.poll() is None
    assert "begin_shutdown" not in degraded.lines


@pytest.mark.slow
def test_anyone_elses_sigterm_stops_a_degraded_rank_0(degraded):
    port = int(degraded.wait_for(degraded.lines, "serving").split()[1])
    os.kill(degraded.proc.pid, signal.SIGTERM)  # the launcher's first: it stays up
    degraded.wait_for(degraded.errors, "specchat serve: SIGTERM from the launcher")
    assert degraded.answers(port)
    sibling = kill_from_a_sibling(degraded.proc.pid)
    assert degraded.proc.wait(WAIT_S) == 0
    degraded.wait_for(degraded.lines, "stopped")
    assert "begin_shutdown" in degraded.lines
    assert f"specchat serve: SIGTERM from process {sibling}: stopping" in degraded.errors


@pytest.mark.slow
def test_the_launchers_sigterm_stops_a_healthy_rank_0():
    child = Child("healthy")
    try:
        child.wait_for(child.lines, "serving")
        os.kill(child.proc.pid, signal.SIGTERM)
        assert child.proc.wait(WAIT_S) == 0
        assert "stopped" in child.lines and not any("staying up" in line for line in child.errors)
    finally:
        child.stop()


def test_sigterm_while_loading_ends_rank_0_as_before():
    """Before route(), the watch ends the process at once (status 143, the shell's for SIGTERM)."""
    code = (
        "import sys, time; from specchat.cluster.sigterm import hold_sigterm, SigtermWatch; hold_sigterm(); "
        "SigtermWatch().start(); print('held', flush=True); time.sleep(600)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "held\n"
        kill_from_a_sibling(proc.pid)
        assert proc.wait(WAIT_S) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


class Degraded:
    """A backend whose probe finds a rank gone (in-process: handle_exit, as macOS delivers SIGTERM)."""

    state = types.SimpleNamespace(degraded="rank 1 on host test is gone")

    def __init__(self):
        self.probed = threading.Event()
        self.shutdowns = 0

    def probe(self) -> bool:
        self.probed.set()
        return False

    def begin_shutdown(self) -> None:
        self.shutdowns += 1


def test_without_the_sender_a_second_sigterm_stops_a_degraded_rank_0(capsys):
    backend = Degraded()
    server = ClusterServer(uvicorn.Config(lambda *a: None), backend)
    server.handle_exit(signal.SIGTERM, None)
    assert backend.probed.wait(WAIT_S)
    pause, waited = threading.Event(), 0.0
    while "staying up" not in capsys.readouterr().err and waited < WAIT_S:
        waited += 0.05
        pause.wait(0.05)
    assert not server.should_exit and backend.shutdowns == 0
    server.handle_exit(signal.SIGTERM, None)
    assert server.should_exit and backend.shutdowns == 1
