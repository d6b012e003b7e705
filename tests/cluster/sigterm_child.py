"""A rank-0-like process for test_sigterm: holds SIGTERM as `serve` does under mlx.launch, then serves a
ClusterServer whose cluster reports degraded or healthy (argv[1]) until a SIGTERM stops it.

It prints "image" (once per exec), "threads N blocked B" (OS threads but the watcher, how many hold SIGTERM),
"serving PORT" and, once stopped, "stopped" on stdout."""

import sys
import threading
import types
from pathlib import Path

import numpy  # noqa: F401  (starts BLAS threads before the mask is set, as `serve` does)
import uvicorn

from specchat.cluster.serve import ClusterServer
from specchat.cluster.sigterm import SigtermWatch, die_of_sigterm, hold_sigterm
from specchat.server.running import free_port

SIGTERM_BIT = 1 << (15 - 1)


def held_by_every_thread(watcher: int) -> tuple[int, int]:
    """(OS threads but the watcher, those whose mask blocks SIGTERM). The watcher's shows SIGTERM unblocked
    while it waits in sigwaitinfo (Linux lets the signal reach it that way)."""
    masks = [
        int(line.split()[1], 16)
        for task in Path("/proc/self/task").iterdir()
        if int(task.name) != watcher
        for line in (task / "status").read_text().splitlines()
        if line.startswith("SigBlk:")
    ]
    return len(masks), sum(1 for mask in masks if mask & SIGTERM_BIT)


class FakeCluster:
    """The backend surface ClusterServer uses: probe() answers as argv[1] says."""

    def __init__(self, degraded: bool):
        self.state = types.SimpleNamespace(degraded="rank 1 on host test is gone" if degraded else None)

    def probe(self) -> bool:
        return self.state.degraded is None

    def begin_shutdown(self) -> None:
        print("begin_shutdown", flush=True)


async def app(scope, receive, send):
    """Answers every HTTP request with 200 "up"."""
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"up"})


def main() -> int:
    print("image", flush=True)  # twice: hold_sigterm runs the process again, numpy's threads being there
    hold_sigterm()
    watch = SigtermWatch().start()
    late = threading.Thread(target=threading.Event().wait, args=(60,), daemon=True)
    late.start()  # a thread started now inherits the held mask
    print("threads {} blocked {}".format(*held_by_every_thread(watch._thread.native_id)), flush=True)
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = ClusterServer(config, FakeCluster(sys.argv[1] == "degraded"))
    watch.route(server.check_ranks, server.stop_for)
    print(f"serving {port}", flush=True)
    server.run()
    watch.route(die_of_sigterm, die_of_sigterm)
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
