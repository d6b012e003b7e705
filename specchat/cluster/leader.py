"""Rank 0: each generation is broadcast to the other ranks and run in lockstep, under a watchdog."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from specchat.engine.config import GenerationConfig
from specchat.engine.events import Event, Failed

from .group import ClusterGroup
from .protocol import (
    GENERATE,
    PING,
    STOP,
    ClusterError,
    Job,
    Lockstep,
    RankMemory,
    align_engines,
    gather_memory,
    is_link_error,
    send_job,
    shared_config,
)

if TYPE_CHECKING:
    from specchat.engine.engine import Engine

RESTART = (
    "stop every rank (Ctrl-C where mlx.launch runs; `kill -INT` the rank-0 process if it runs detached) "
    "and start the same mlx.launch command again"
)


class ClusterState:
    """What rank 0 knows about the cluster: its ranks, their memory, and whether it is degraded."""

    def __init__(self, group: ClusterGroup, rank_timeout_s: float):
        self.group, self.rank_timeout_s = group, rank_timeout_s
        self.memory: list[RankMemory] = []
        self.degraded: str | None = None
        self.kept_up = False  # the launcher asked rank 0 to stop (a rank exited) and it stayed up, degraded
        self._lock = threading.Lock()
        self._busy_since: float | None = None
        self._last_beat = 0.0
        self._on_fault: Callable[[str], None] | None = None

    def degrade(self, reason: str) -> str:
        """Mark the cluster degraded (the first reason stays); the message a failing request shows."""
        with self._lock:
            self.degraded = self.degraded or reason
        return f"cluster degraded: {reason}. Restart it: {RESTART}"

    def begin(self, on_fault: Callable[[str], None] | None = None) -> None:
        """A job that needs every rank starts; on_fault(message) is called if a rank stalls."""
        with self._lock:
            self._busy_since = self._last_beat = time.monotonic()
            self._on_fault = on_fault

    def beat(self) -> None:
        """Every rank answered just now."""
        self._last_beat = time.monotonic()

    def end(self) -> None:
        """The job is over."""
        with self._lock:
            self._busy_since, self._on_fault = None, None

    def check_stall(self, now: float | None = None) -> bool:
        """Degrade and fail the running job when the ranks have not answered within the bound."""
        now = time.monotonic() if now is None else now
        with self._lock:
            if self._busy_since is None or now - self._last_beat <= self.rank_timeout_s:
                return False
            on_fault, self._busy_since, self._on_fault = self._on_fault, None, None
        message = self.degrade(f"{self.group.others()} did not answer within {self.rank_timeout_s:g} s")
        if on_fault is not None:
            on_fault(message)
        return True

    def snapshot(self) -> dict[str, object]:
        """The cluster's part of /specchat/v1/status."""
        ranks: list[RankMemory] = self.memory or [
            {"rank": r, "host": h, "pid": p} for r, (h, p) in enumerate(zip(self.group.hosts, self.group.pids))
        ]
        return {
            "size": self.group.size,
            "ranks": ranks,
            "degraded": self.degraded is not None,
            "degraded_reason": self.degraded,
            "restart": RESTART if self.degraded else None,
            "rank_timeout_s": self.rank_timeout_s,
            "kept_up_after_launcher_stop": self.kept_up,
        }


class Watchdog:
    """A daemon thread that calls state.check_stall() a few times a second."""

    def __init__(self, state: ClusterState, period_s: float = 0.2):
        self.state, self.period_s = state, period_s
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="cluster-watchdog", daemon=True)

    def start(self) -> Watchdog:
        """Start watching."""
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop watching."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self.state.check_stall()


def lead_generation(
    state: ClusterState,
    engine: Engine,
    prompt: list[int],
    cfg: GenerationConfig,
    cancel: threading.Event,
    job_id: int = 0,
) -> Iterator[Event]:
    """Broadcast one generation and yield rank 0's engine events, checked with every rank after each."""
    group, cfg = state.group, shared_config(cfg)
    try:
        send_job(group, Job(GENERATE, job_id, tuple(prompt), cfg))
        align_engines(group, engine)
        state.beat()
        lock = Lockstep(group, cancel, state.beat)
        for event in lock.run(engine.stream(prompt, cfg, lock.agreed_cancel)):
            if isinstance(event, Failed) and is_link_error(event.message):
                raise ClusterError(state.degrade(f"lost the link to {group.others()} ({event.message})"))
            yield event
        state.memory = gather_memory(group)
    except ClusterError:
        engine.reset()
        raise
    except RuntimeError as exc:  # a collective outside the engine lost its peer
        engine.reset()
        raise ClusterError(state.degrade(f"lost the link to {group.others()} ({exc})")) from None


def ping(state: ClusterState) -> list[RankMemory]:
    """Ask every rank for its memory (also proves they still answer); ClusterError when one is gone."""
    try:
        send_job(state.group, Job(PING))
        state.memory = gather_memory(state.group)
    except RuntimeError as exc:
        raise ClusterError(state.degrade(f"lost the link to {state.group.others()} ({exc})")) from None
    return state.memory


def stop_followers(state: ClusterState) -> None:
    """Tell every rank to exit (skipped when the cluster is degraded: they may not answer)."""
    if state.degraded is None:
        send_job(state.group, Job(STOP))
