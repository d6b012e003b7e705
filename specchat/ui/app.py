"""Start the desktop app: `specchat [--target DIR [--draft DIR] [--dflash DIR]]`."""

from __future__ import annotations

import importlib
import logging
import os
import signal
import sys
from types import FrameType
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from specchat.logs import details_note
from specchat.paths import AppPaths

from .first_window import FirstWindow, mark
from .gui_gc import GuiThreadCollector
from .worker_pool import shutdown_all

if TYPE_CHECKING:
    from .main_window import MainWindow

log = logging.getLogger(__name__)
WAKE_MS = 200
ENGINE_WAIT_S = 10.0  # after the window's close (which already waited on the engine): the last bound
POOL_WAIT_S = 10.0
PAINT_WAIT_MS = 1000  # build the main window this long after the first window's show, painted or not
# Imported one per step after the first window is painted, so it still takes events between them (each
# takes seconds on a busy machine); the main window's module then imports what is left.
WARM_UP = ("transformers", "specchat.engine.engine", "specchat.engine.owner", "pyqtgraph", "specchat.server.app")


def run_app(
    target: str | None = None, draft: str | None = None, paths: AppPaths | None = None, dflash: str | None = None
) -> int:
    """Show the first window at once, then build the main window (on a local model folder, with its draft
    and DFlash drafter, when given) in its place, and run until it closes."""
    # The Rust tokenizers' own thread pool is no use for one chat prompt, and threads of theirs still
    # alive at exit (or a fork after they ran) are what their shutdown problems come from.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName("SpecChat")
    app.setOrganizationName("SpecChat")
    wake = close_on_stop_signals(app)
    collector = GuiThreadCollector(app)  # no cycle holding a Qt object is collected on another thread
    start = Startup(app, paths or AppPaths.default(), target=target, draft=draft, dflash=dflash)
    status = app.exec()
    wake.stop()
    if start.window is None:  # closed before the main window was built, or it could not be built
        collector.stop()
        return start.failed or status
    return stop_threads(start.window, collector, status)


class Startup(QObject):
    """Shows the first window, then, once it is painted, imports the heavy modules a step at a time and
    builds the main window in its place; a window that cannot be built is said in a dialog."""

    def __init__(self, app: QApplication, paths: AppPaths, target: str | None, draft: str | None, dflash: str | None):
        super().__init__(app)
        self.app, self.paths, self.pair = app, paths, (target, draft, dflash)
        self.window: MainWindow | None = None
        self.failed = 0  # the exit status when the main window could not be built
        self.steps: list[str] | None = None  # the imports still to run, once begun
        self.first: FirstWindow | None = FirstWindow(paths)
        self.first.painted.connect(self._begin)
        self.first.show()
        QTimer.singleShot(PAINT_WAIT_MS, self._begin)  # a platform that never paints it still starts

    def _begin(self) -> None:
        if self.steps is None:
            self.steps = list(WARM_UP)
            self._next_step()

    def _next_step(self) -> None:
        if self.first is None:  # built already
            return
        if not self.first.isVisible():  # closed (a stop signal, its close button) before the main window was built
            self.app.quit()  # a close before app.exec() ran quits nothing by itself
            return
        if self.steps:
            name = self.steps.pop(0)
            try:
                importlib.import_module(name)
            except Exception:  # the main window's own import fails the same way, and says it in a dialog
                log.exception("importing %s failed", name)
            QTimer.singleShot(0, self._next_step)
            return
        self._build()

    def _build(self) -> None:
        first, self.first = self.first, None
        assert first is not None
        try:
            target, draft, dflash = self.pair
            window = main_window_class()(self.paths, target=target, draft=draft, dflash=dflash)
        except Exception as error:  # a bug in building the window: say so in a dialog, never a bare traceback
            log.exception("the main window could not be built")
            QMessageBox.critical(None, "SpecChat could not start", f"{type(error).__name__}: {error}.{details_note()}")
            self.failed = 1
            self.app.exit(1)
            first.setAttribute(Qt.WidgetAttribute.WA_QuitOnClose, False)  # the status is 1, not a close's 0
            first.close()
            return
        self.window = window
        if first.isMaximized() or first.isFullScreen():
            window.setWindowState(first.windowState())
        else:  # where the first window is: the saved place, the window manager's, or where the user moved it
            window.setGeometry(first.geometry())
        window.show()
        first.close()
        mark("main-window-shown")


def main_window_class() -> type[MainWindow]:
    """MainWindow, imported on first use (specchat.ui.app.MainWindow, as tests replace it)."""
    found = globals().get("MainWindow")
    return found if found is not None else __getattr__("MainWindow")


def __getattr__(name: str) -> Any:
    if name == "MainWindow":  # imports the engine, MLX, pyqtgraph and FastAPI: seconds
        from .main_window import MainWindow

        globals()["MainWindow"] = MainWindow
        return MainWindow
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
