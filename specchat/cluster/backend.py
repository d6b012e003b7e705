"""The HTTP server's backend on rank 0: every generation runs on all ranks; faults degrade the cluster."""

from __future__ import annotations

import threading
from collections.abc import Callable

from specchat.engine.config import GenerationConfig
from specchat.engine.engine import Engine
from specchat.engine.owner import TERMINAL, EngineHost, JobContext, JobEvent, JobFailed, JobHandle, JobInfo, JoinSpec
from specchat.server.backend import DEFAULT_MAX_BATCH, EngineBackend
from specchat.server.errors import ApiError

from .batch_lead import ClusterBatchApi
from .leader import ClusterState, lead_generation, ping
from .protocol import ClusterError, RankMemory


def degraded_error(state: ClusterState) -> ApiError:
    """503 for requests that arrive after the cluster lost a rank."""
    return ApiError(503, state.degrade(state.degraded or "unknown"), "server_error", None, "cluster_degraded")


class Gate:
    """A job's listener that the watchdog can close with a failure when the engine thread is stuck."""

    def __init__(self, listener: Callable[[JobEvent], None], registry: dict[int, Gate]):
        self.listener, self.registry = listener, registry
        self.info: JobInfo | None = None
        self._closed = False
        self._lock = threading.Lock()

    def __call__(self, event: JobEvent) -> None:
        with self._lock:
            if self._closed:
                return
            if self.info is None:  # the first event (JobQueued) comes while submit() runs: before the job
                self.info = event.job
                self.registry[self.info.id] = self
            self._closed = isinstance(event, TERMINAL)
            if self._closed:
                self.registry.pop(self.info.id, None)
        self.listener(event)

    def fail(self, message: str) -> None:
        """End the job for its consumer now with `message` (later events are dropped)."""
        with self._lock:
            if self._closed or self.info is None:
                return
            self._closed = True
        self.listener(JobFailed(self.info, message, ClusterError.kind))


class ClusterBackend(EngineBackend):
    """EngineBackend whose jobs run in lockstep on every rank (a batch's steps too); pings the ranks while idle."""

    def __init__(
        self,
        host: EngineHost,
        max_queue: int,
        state: ClusterState,
        heartbeat_s: float = 10.0,
        max_batch: int = DEFAULT_MAX_BATCH,
    ):
        super().__init__(host, max_queue, max_batch)
        self.state, self.heartbeat_s = state, heartbeat_s
        self.decoder = ClusterBatchApi(state, self._fail_running)  # batches step every rank (batch_lead.py)
        self._gates: dict[int, Gate] = {}
        self._stop = threading.Event()
        self._pinger = threading.Thread(target=self._ping_while_idle, name="cluster-ping", daemon=True)

    def start_pinging(self) -> None:
        """Ping the ranks every heartbeat_s while no job runs (a dead rank shows as degraded)."""
        self._pinger.start()

    def stop(self) -> None:
        """Stop pinging."""
        self._stop.set()

    def start(self, prompt_ids: list[int], cfg: GenerationConfig, listener: Callable[[JobEvent], None]) -> JobHandle:
        """Queue the generation on every rank; 503 while the cluster is degraded."""
        if self.state.degraded:
            raise degraded_error(self.state)
        return super().start(prompt_ids, cfg, Gate(listener, self._gates))

    def join_spec(self, prompt_ids: list[int], cfg: GenerationConfig) -> JoinSpec | None:
        """The generation joins a batch that runs on every rank; None when batching is off (max_batch 1)."""
        if self.max_batch <= 1:
            return None
        return JoinSpec(tuple(prompt_ids), cfg, tuple(self.observers), self.max_batch, self.decoder)

    def generation_work(self, prompt_ids: list[int], cfg: GenerationConfig) -> Callable[[JobContext], None]:
        """The job when it runs alone (batching off, or a config the batch refuses): broadcast, then run in
        lockstep under the watchdog."""
        state = self.state

        def work(ctx: JobContext) -> None:
            gate = self._gates.pop(ctx.handle.id, None)
            state.begin(gate.fail if gate is not None else None)
            try:
                engine = ctx.engine
                assert isinstance(engine, Engine)  # a cluster's host runs its rank's local engine
                for event in lead_generation(state, engine, prompt_ids, cfg, ctx.cancel, ctx.handle.id):
                    ctx.emit(event)
            finally:
                state.end()

        return work

    def _fail_running(self, message: str) -> None:
        """The watchdog's call for a stalled batch: every running row's consumer gets the failure now."""
        for info in self.host.state().running_batch:
            gate = self._gates.get(info.id)
            if gate is not None:
                gate.fail(message)

    def probe(self, timeout_s: float | None = None) -> bool:
        """Ping every rank now (queued behind running jobs); True when all answered."""
        if self.state.degraded:
            return False
        handle = self.host.submit("cluster-ping", self._ping_work)
        handle.wait(timeout_s if timeout_s is not None else self.state.rank_timeout_s + 2)
        return handle.done and not isinstance(handle.outcome, JobFailed) and not self.state.degraded

    def _ping_work(self, ctx: JobContext) -> list[RankMemory]:
        self.state.begin()
        try:
            return ping(self.state)
        finally:
            self.state.end()

    def _ping_while_idle(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            queue = self.host.state()
            if self.state.degraded is None and queue.running is None and not queue.queued:
                self.host.submit("cluster-ping", self._ping_work)

    def extra_status(self) -> dict[str, object]:
        """The cluster's ranks (host, pid, memory), and whether it is degraded and how to restart it."""
        return {"cluster": self.state.snapshot()}
