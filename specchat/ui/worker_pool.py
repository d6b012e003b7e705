"""The UI's one pool of worker threads for blocking work that runs no model (folders, pmset, HTTP status
reads, hub calls); model work goes to the engine host. No Qt: results reach the GUI thread through
specchat.ui.tasks."""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")
MAX_WORKERS = 4
SHUTDOWN_WAIT_S = 10.0  # each task is bounded (a hub deadline, a subprocess timeout): this is a backstop


_pools: weakref.WeakSet[WorkerPool] = weakref.WeakSet()  # every pool not yet collected (shutdown_all)


class PoolClosedError(RuntimeError):
    """Work was submitted after the pool was shut down (its window is closing)."""


class WorkerPool:
    """A few named threads; submit() returns a Future, shutdown() drops what waits and waits for what runs."""

    def __init__(self, name: str = "specchat-worker", max_workers: int = MAX_WORKERS):
        self.name = name
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=name)
        self._running: set[Future] = set()
        self._lock = threading.Lock()
        self.closed = False
        _pools.add(self)

    def submit(self, fn: Callable[..., T], *args: object) -> Future[T]:
        """Run fn(*args) on a pool thread; PoolClosedError after shutdown()."""
        with self._lock:
            if self.closed:
                raise PoolClosedError(f"the {self.name} pool is shut down")
            future = self._executor.submit(fn, *args)
            self._running.add(future)
        future.add_done_callback(self._forget)
        return future

    def shutdown(self, wait_s: float = SHUTDOWN_WAIT_S) -> bool:
        """Cancel the tasks not started and wait up to wait_s for the running ones; False when some still run."""
        with self._lock:
            self.closed = True
        self._executor.shutdown(wait=False, cancel_futures=True)
        with self._lock:  # after the cancelling: futures.wait() would not see a cancelled future as done
            running = {future for future in self._running if not future.done()}
        _done, late = wait(running, timeout=wait_s)
        if late:
            log.warning("%d %s task(s) still running after %.0f s at shutdown", len(late), self.name, wait_s)
        return not late

    @property
    def busy(self) -> bool:
        """True while a submitted task has not ended."""
        with self._lock:
            return any(not future.done() for future in self._running)  # done but not yet forgotten: not busy

    def _forget(self, future: Future) -> None:
        with self._lock:
            self._running.discard(future)


def shutdown_all(wait_s: float = SHUTDOWN_WAIT_S) -> bool:
    """Shut down every pool still open (the app's exit); False when a task still runs after wait_s."""
    open_pools = [pool for pool in list(_pools) if not pool.closed or pool.busy]
    return all([pool.shutdown(wait_s) for pool in open_pools])
