"""The UI's worker pool and its Qt adapter: results come home on the GUI thread; shutdown drops what waits."""

import threading

import pytest

from specchat.ui.tasks import TaskRunner
from specchat.ui.worker_pool import PoolClosedError, WorkerPool

WAIT_S = 30
WAIT_MS = WAIT_S * 1000


def test_a_result_and_an_error_reach_their_callbacks_on_the_gui_thread(qtbot):
    runner = TaskRunner(describe=lambda exc: f"said: {exc}")
    seen = []

    def broken():
        raise ValueError("no such folder")

    with qtbot.waitSignal(runner.taskDone, timeout=WAIT_MS):
        runner.run(threading.current_thread, lambda worker: seen.append((worker, threading.current_thread())), None)
    qtbot.waitUntil(lambda: not runner.busy, timeout=WAIT_MS)
    with qtbot.waitSignal(runner.taskFailed, timeout=WAIT_MS):
        runner.run(broken, None, lambda message: seen.append((message, threading.current_thread())))
    qtbot.waitUntil(lambda: not runner.busy, timeout=WAIT_MS)
    runner.shutdown()
    (worker, first_home), (message, second_home) = seen
    assert worker is not threading.main_thread() and worker.name.startswith("specchat-worker")
    assert first_home is second_home is threading.main_thread() and message == "said: no such folder"


def test_shutdown_drops_waiting_tasks_and_waits_for_the_running_one():
    pool = WorkerPool(max_workers=1)
    started, release, ran = threading.Event(), threading.Event(), []
    running = pool.submit(lambda: (started.set(), release.wait(WAIT_S)))
    assert started.wait(WAIT_S)
    waiting, dropped = pool.submit(ran.append, "late"), threading.Event()
    waiting.add_done_callback(lambda _future: dropped.set())
    outcome = []
    closer = threading.Thread(target=lambda: outcome.append(pool.shutdown(WAIT_S)))
    closer.start()
    assert (
        dropped.wait(WAIT_S) and waiting.cancelled() and closer.is_alive() and pool.busy
    )  # still waiting for the running task
    release.set()
    closer.join(WAIT_S)
    assert outcome == [True] and running.done() and ran == [] and not pool.busy
    with pytest.raises(PoolClosedError):
        pool.submit(ran.append, "after")


def test_a_task_run_after_shutdown_is_dropped_quietly():
    runner = TaskRunner()
    runner.shutdown()
    called = []
    runner.run(lambda: called.append("ran"), called.append, called.append)  # a timer firing while closing
    assert called == [] and not runner.busy and runner.pool.closed
