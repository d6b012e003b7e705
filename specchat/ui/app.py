"""Start the desktop app: `specchat [--target DIR [--draft DIR] [--dflash DIR]]`."""

from __future__ import annotations

import logging
import os
import signal
import sys
from types import FrameType

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from specchat.logs import details_note
from specchat.paths import AppPaths

from .gui_gc import GuiThreadCollector
from .main_window import MainWindow
from .worker_pool import shutdown_all

log = logging.getLogger(__name__)
WAKE_MS = 200
ENGINE_WAIT_S = 10.0  # after the window's close (which already waited on the engine): the last bound
POOL_WAIT_S = 10.0


def run_app(
    target: str | None = None, draft: str | None = None, paths: AppPaths | None = None, dflash: str | None = None
) -> int:
    """Open the main window (on a local model folder, with its draft and DFlash drafter, when given) and run
    until it closes."""
    # The Rust tokenizers' own thread pool is no use for one chat prompt, and threads of theirs still
    # alive at exit (or a fork after they ran) are what their shutdown problems come from.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName("SpecChat")
    app.setOrganizationName("SpecChat")
    wake = close_on_stop_signals(app)
    collector = GuiThreadCollector(app)  # no cycle holding a Qt object is collected on another thread
    try:
        window = MainWindow(paths, target=target, draft=draft, dflash=dflash)
    except Exception as error:  # a bug in building the window: say so in a dialog, never a bare traceback
        log.exception("the main window could not be built")
        QMessageBox.critical(None, "SpecChat could not start", f"{type(error).__name__}: {error}.{details_note()}")
        return 1
    window.show()
    status = app.exec()
    wake.stop()
    return stop_threads(window, collector, status)


def stop_threads(window: MainWindow, collector: GuiThreadCollector, status: int) -> int:
    """The shutdown order once the event loop ended, before the interpreter's own: the window closed (its
    reply saved, its jobs cancelled), the engine released and its thread parked for good (outside MLX and
    the tokenizers), every worker pool stopped, then the last collection on this thread. A thread still
    inside MLX or a tokenizer when the interpreter finalizes aborts the process (a C++ terminate, a Rust
    panic): then the process ends at once instead."""
    if window.isVisible():
        window.close()  # app.exec() can end with the window open (app.quit())
    window.client.shutdown(int(ENGINE_WAIT_S * 1000))  # again: a no-op when the window's close did it
    parked = window.client.host.shutdown(ENGINE_WAIT_S)  # True at once once parked
    pools_done = shutdown_all(POOL_WAIT_S)
    collector.stop()  # collects on this thread, with no other thread left running Python
    if not (parked and pools_done):
        busy = "the engine" if not parked else "a worker task"
        log.warning("%s was still busy at exit; ending the process without waiting on it", busy)
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


def close_on_stop_signals(app: QApplication) -> QTimer:
    """Ctrl-C or SIGTERM in the terminal closes the windows as their close buttons do (the reply in progress
    is saved, the engine released). Qt's event loop runs no Python code by itself, so a Python signal
    handler would wait for the next Qt callback (or Python's default one raise KeyboardInterrupt inside
    it): a timer wakes the interpreter every WAKE_MS."""

    def close(_signum: int, _frame: FrameType | None) -> None:
        QTimer.singleShot(0, app.closeAllWindows)

    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, close)
    wake = QTimer(app)
    wake.timeout.connect(lambda: None)
    wake.start(WAKE_MS)
    return wake
