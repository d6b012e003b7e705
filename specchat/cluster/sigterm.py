"""Who sent a SIGTERM: the launcher (mlx.launch stops every rank when one exits) or anyone else.

Python's signal handlers are not told the sender, so where the platform has sigwaitinfo (Linux) SIGTERM
is blocked in every thread and one watcher thread reads it with its sender's pid. macOS has no
sigwaitinfo: there the sender stays unknown and SIGTERM reaches the usual handler.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

SENDER_KNOWN = hasattr(signal, "sigwaitinfo") and hasattr(signal, "pthread_sigmask")
TASKS = Path("/proc/self/task")  # one entry per OS thread (Linux)

Reaction = Callable[[int], None]  # called with the sender's pid


def os_threads() -> int:
    """How many OS threads this process runs (BLAS and MLX start some of their own); 0 when not known."""
    try:
        return len(os.listdir(TASKS))
    except OSError:
        return 0


def hold_sigterm() -> None:
    """Block SIGTERM in every thread, so that a SigtermWatch can read who sent it (no-op without sigwaitinfo).

    A thread takes its mask from the thread that starts it, and threads that already run (BLAS's, started
    on import) keep theirs: the kernel would hand SIGTERM to one of them. So unless this is the only
    thread, the process runs itself again with SIGTERM blocked: the same pid (the launcher's handle stays
    valid), arguments and environment; a SIGTERM sent meanwhile stays pending for the watcher."""
    if not SENDER_KNOWN:
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    if signal.SIGTERM in previous or os_threads() == 1:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


def release_sigterm() -> None:
    """Deliver SIGTERM as usual again (to this thread, the main one): for processes that do not watch it."""
    if SENDER_KNOWN:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def die_of_sigterm(_sender: int = 0) -> None:
    """End the process now, with the shell's status for a SIGTERM (143): what SIGTERM did before it was held.
    (The default action cannot be restored from this thread: Python sets dispositions on the main one.)"""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(128 + signal.SIGTERM)


class SigtermWatch:
    """A thread that reads every SIGTERM (held by hold_sigterm) and reacts by its sender: the launcher's
    (this process's parent when it started) or anyone else's. Until route() says otherwise, both die."""

    def __init__(self, launcher_pid: int | None = None):
        self.launcher_pid = os.getppid() if launcher_pid is None else launcher_pid
        self.on_launcher: Reaction = die_of_sigterm
        self.on_other: Reaction = die_of_sigterm
        self._thread = threading.Thread(target=self._watch, name="sigterm-watch", daemon=True)

    def start(self) -> SigtermWatch:
        """Start reading SIGTERMs (only where the sender can be known and SIGTERM is held)."""
        if SENDER_KNOWN and signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, set()):
            self._thread.start()
        return self

    @property
    def running(self) -> bool:
        """True when this watch, not a signal handler, receives SIGTERM."""
        return self._thread.is_alive()

    def route(self, on_launcher: Reaction, on_other: Reaction) -> None:
        """React to the launcher's SIGTERMs with on_launcher(pid), to anyone else's with on_other(pid)."""
        self.on_launcher, self.on_other = on_launcher, on_other

    def _watch(self) -> None:
        while True:
            sender = signal.sigwaitinfo({signal.SIGTERM}).si_pid
            (self.on_launcher if sender == self.launcher_pid else self.on_other)(sender)
