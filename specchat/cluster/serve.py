"""`python -m specchat serve` under mlx.launch: rank 0 loads its shard and serves HTTP, the others follow."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import uvicorn

from specchat.engine.engine import Engine
from specchat.engine.errors import EngineError
from specchat.engine.loading import load_model
from specchat.hub.errors import HubError
from specchat.server.running import ServingServer, exit_after_engine, stop_at_once

from .backend import ClusterBackend
from .follower import follow
from .group import ClusterGroup
from .leader import ClusterState, Watchdog, stop_followers
from .memory_plan import PLANNED_CONTEXT, rank_fit
from .protocol import share_decisions
from .sharding import load_sharded
from .sigterm import SigtermWatch, die_of_sigterm, release_sigterm

if TYPE_CHECKING:
    from specchat.engine.owner import JobContext

LOAD_WAIT_S = 600.0  # how long rank 0 waits, once loaded, for the others to finish loading their shards


def build_engine(group: ClusterGroup, target: str, draft: str | None) -> Engine:
    """This rank's engine: its shard of the target, and the whole draft (replicated on every rank)."""
    engine = Engine(load_sharded(target, group.group), load_model(draft) if draft else None)
    share_decisions(engine, group)
    return engine


def load_job(group: ClusterGroup, target: str, draft: str | None) -> Callable[[JobContext], dict[str, str | None]]:
    """A host job that builds this rank's engine on the host's thread and installs it."""

    def work(ctx: JobContext) -> dict[str, str | None]:
        engine = build_engine(group, target, draft)
        ctx.host.install(engine)
        return engine.available_modes()

    return work


class ClusterServer(ServingServer):
    """uvicorn that tells the launcher's SIGTERM from anyone else's.

    mlx.launch sends SIGTERM to every rank when one exits. Rank 0 then pings the others: if one is gone
    the server stays up, degraded, so clients get a clear 503 instead of a refused connection (Ctrl-C
    stops it); if every rank answers, the server stops as usual. A SIGTERM from anyone else (a user's
    `kill`, a service manager) stops the server, degraded or not. Where the sender cannot be known
    (macOS), the first SIGTERM while degraded counts as the launcher's and a second one stops.
    """

    def __init__(self, config: uvicorn.Config, backend: ClusterBackend):
        super().__init__(config, backend)
        self.cluster = backend
        self._told = False

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig != signal.SIGTERM:
            return super().handle_exit(sig, frame)
        if self._told:  # the sender is not known here: the launcher sends one SIGTERM, so this is someone else
            return self.stop_for(0)
        self.check_ranks(0)

    def check_ranks(self, _sender: int) -> None:
        """The launcher's SIGTERM: stop when every rank answers, stay up degraded when one is gone."""
        threading.Thread(target=self._stop_unless_degraded, name="sigterm-probe", daemon=True).start()

    def stop_for(self, sender: int) -> None:
        """Anyone else's SIGTERM: stop now (the second stop signal ends the process at once)."""
        self.stop_signals += 1
        if self.stop_signals > 1:
            stop_at_once("specchat serve", "SIGTERM")
        if sender:
            print(f"specchat serve: SIGTERM from process {sender}: stopping", file=sys.stderr, flush=True)
        self.stop()

    def _stop_unless_degraded(self) -> None:
        if self.cluster.probe():
            self.stop()
        elif not self._told:
            self._told = self.cluster.state.kept_up = True
            print(
                f"specchat serve: SIGTERM from the launcher while the cluster is degraded "
                f"({self.cluster.state.degraded}); staying up to answer with a clear error; "
                "Ctrl-C or `kill` stops the server",
                file=sys.stderr,
                flush=True,
            )


def run_cluster_serve(args: argparse.Namespace, group: ClusterGroup) -> int:
    """Serve the sharded pair: HTTP on rank 0, the follower loop elsewhere; the exit status."""
    if group.rank > 0:
        release_sigterm()  # held since before the group formed (cli.run_serve); a follower dies of it
        try:
            engine = build_engine(group, args.target, args.draft)
        except EngineError as exc:
            print(f"specchat serve ({group.where(group.rank)}): {exc}", file=sys.stderr)
            return 1
        return follow(group, engine)
    return _serve_rank0(args, group, SigtermWatch().start())


def rank_memory_line(target: str, draft: str | None, ranks: int) -> str:
    """What each rank needs for its share of the target and the whole draft, against this Mac's memory."""
    try:
        fit = rank_fit(Path(target), Path(draft) if draft else None, PLANNED_CONTEXT, ranks)
    except (HubError, OSError, ValueError) as exc:  # the load that follows names what is wrong with the folder
        return f"Memory per rank: not known ({exc})"
    return f"Memory per rank (1/{ranks} of the target, the whole draft): {fit.summary()}"


def _serve_rank0(args: argparse.Namespace, group: ClusterGroup, watch: SigtermWatch) -> int:
    from specchat.engine.owner import EngineHost
    from specchat.server.app import ServerOptions, create_app
    from specchat.server.cli import serve_defaults

    try:
        mode, defaults = serve_defaults(args)
    except (ValueError, EngineError) as exc:
        print(f"specchat serve: {exc}", file=sys.stderr)
        return 2
    print(rank_memory_line(args.target, args.draft, group.size), flush=True)
    host = EngineHost()
    state = ClusterState(group, args.rank_timeout)
    backend = ClusterBackend(host, args.max_queue, state, args.heartbeat, args.max_batch)
    try:
        modes = host.submit("load", load_job(group, args.target, args.draft)).result()
        if modes.get(mode):
            raise EngineError(f"--mode {mode} is not available: {modes[mode]}")
        if not backend.probe(timeout_s=max(LOAD_WAIT_S, args.rank_timeout)):  # the others loaded, memory known
            raise EngineError(state.degraded or f"{group.others()} did not load the model in time")
    except EngineError as exc:
        print(f"specchat serve: {exc}", file=sys.stderr)
        return 1
    watchdog = Watchdog(state).start()
    backend.start_pinging()
    options = ServerOptions(defaults, args.api_key, tuple(args.cors_origin))
    print(
        f"Serving {backend.models()[0]} sharded over {group.size} ranks (rank 0 here; {group.others()}) "
        f"on http://{args.host}:{args.port}/v1 (speculation: {mode}); Ctrl-C stops",
        flush=True,
    )
    config = uvicorn.Config(create_app(backend, options), host=args.host, port=args.port, log_level="warning")
    server = ClusterServer(config, backend)
    watch.route(server.check_ranks, server.stop_for)  # until now (loading) and after, SIGTERM ends the process
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn raises the Ctrl-C it stopped on again, once the requests closed
        pass
    watch.route(die_of_sigterm, die_of_sigterm)
    watchdog.stop()
    backend.stop()
    if state.degraded is None:
        host.submit("cluster-stop", lambda ctx: stop_followers(state)).wait(5)
    # After a rank died the engine thread may be stuck in a collective for good: do not wait on it.
    return exit_after_engine(host, 0)
