"""shutdown_all stops every open pool at the app's exit and says whether a task outlived the wait."""

import threading

from specchat.ui.worker_pool import PoolClosedError, WorkerPool, shutdown_all

WAIT_S = 60.0


def test_shutdown_all_closes_every_open_pool_and_waits_for_their_tasks():
    first, second = WorkerPool("first"), WorkerPool("second")
    release = threading.Event()
    running = first.submit(release.wait, WAIT_S)
    release.set()
    assert shutdown_all(WAIT_S) is True
    assert first.closed and second.closed and running.result() is True
    try:
        second.submit(lambda: None)
    except PoolClosedError:
        pass
    else:
        raise AssertionError("a pool took work after shutdown_all")


def test_shutdown_all_says_false_while_a_task_outlives_the_wait():
    pool = WorkerPool("stuck")
    release, started = threading.Event(), threading.Event()
    pool.submit(lambda: (started.set(), release.wait(WAIT_S)))
    assert started.wait(WAIT_S)
    try:
        assert shutdown_all(0.05) is False
    finally:
        release.set()
    assert shutdown_all(WAIT_S) is True and not pool.busy
