"""The app's side of tuning/knowledge_store.py: what the speculation controllers learned about a pair outlives
the session. A load job first keeps what the pair it replaces learned, then starts the new pair from its
file; the window keeps it once more when it closes. No Qt: everything here runs inside engine-host jobs."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from specchat.engine.owner import JobContext, LoadedPair, knowledge_job, learn_job
from specchat.paths import AppPaths
from specchat.system.machine import chip_name
from specchat.system.power import read_power
from specchat.tuning.knowledge_store import knowledge_file, load_knowledge, save_knowledge

log = logging.getLogger(__name__)
LoadWork = Callable[[JobContext], LoadedPair]


def power_source() -> str:
    """'ac', 'battery' or 'unknown': a pair's knowledge is kept per power source (costs differ on battery)."""
    return str(read_power().source)


class PairMemory:
    """The knowledge file of the pair the engine host has loaded. Its methods run inside jobs on the engine
    thread (they read and set the engine's controllers), so `file` is only read and written there."""

    def __init__(
        self, paths: AppPaths, machine: Callable[[], str] = chip_name, power: Callable[[], str] = power_source
    ):
        self.paths, self.machine, self.power = paths, machine, power
        self.file: Path | None = None  # None: nothing loaded, or a server's pair (it keeps its own)

    def loading(self, load: LoadWork) -> LoadWork:
        """A load job that keeps what the loaded pair learned, loads, and starts the new pair from its file
        (a failed load leaves the old pair, and its file, in place)."""

        def work(ctx: JobContext) -> LoadedPair:
            self.keep(ctx)
            pair = load(ctx)
            self.learn(ctx, pair)
            return pair

        return work

    def file_for(self, pair: LoadedPair) -> Path | None:
        """The pair's file on this machine and power source; None for a server's pair."""
        if pair.remote is not None:
            return None
        return knowledge_file(self.paths, [pair.target, pair.draft, pair.dflash], self.machine(), self.power())

    def learn(self, ctx: JobContext, pair: LoadedPair) -> bool:
        """Start the just-installed engine's controllers from the pair's file; True when there was one.
        A file that does not fit is logged and ignored: it never fails the load."""
        self.file = self.file_for(pair)
        data = load_knowledge(self.file) if self.file is not None else {}
        if not data:
            return False
        try:
            learn_job(data)(ctx)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            log.warning("the speculation knowledge in %s does not fit this pair (%s): starting afresh", self.file, exc)
            return False
        return True

    def keep(self, ctx: JobContext) -> bool:
        """Save what the loaded engine's controllers know now; False when there is nothing to keep."""
        if self.file is None or ctx.host.engine is None:
            return False
        data = knowledge_job()(ctx)
        return bool(data) and save_knowledge(self.file, data)
