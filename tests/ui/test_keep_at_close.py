"""At close the app keeps what the controllers learned: a slow write still lands, a job ahead that ignores
cancel only costs the keep (the quit goes on)."""

import threading

from specchat.engine.owner import EngineHost
from specchat.ui.engine_client import EngineClient
from specchat.ui.pair_memory import PairMemory


class SlowMemory(PairMemory):
    """A pair memory whose keep takes as long as a busy disk's fsync may, counting what it saved."""

    def __init__(self, paths, write_s: float):
        super().__init__(paths)
        self.write_s, self.saved = write_s, 0

    def keep(self, ctx) -> bool:
        threading.Event().wait(self.write_s)
        self.saved += 1
        return True


def test_a_keep_that_writes_slower_than_the_wait_for_its_start_still_saves(qtbot, paths):
    memory = SlowMemory(paths, write_s=1.5)
    host = EngineHost()
    client = EngineClient(host=host, memory=memory)
    try:
        assert client.keep_knowledge(timeout_ms=200) is True
        assert memory.saved == 1
    finally:
        client.shutdown()
        host.shutdown()


def test_a_job_ahead_that_ignores_cancel_costs_only_the_keep(qtbot, paths):
    memory = SlowMemory(paths, write_s=0.0)
    host = EngineHost()
    client = EngineClient(host=host, memory=memory)
    release, running = threading.Event(), threading.Event()

    def stubborn(_ctx):
        running.set()
        release.wait(60)  # never looks at its cancel event

    blocker = host.submit("stubborn", stubborn)
    try:
        assert running.wait(60)
        assert client.keep_knowledge(timeout_ms=200) is False
        release.set()
        assert blocker.wait(60)
        host.submit("after", lambda _ctx: None).result(60)  # the queue moved past the keep
        assert memory.saved == 0  # the keep left the queue: it never ran after the quit had gone on
    finally:
        release.set()
        client.shutdown()
        host.shutdown()
