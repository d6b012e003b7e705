"""Start the desktop app: `specchat [--target DIR [--draft DIR]]`."""

from __future__ import annotations

import logging
import signal
import sys
from types import FrameType

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from specchat.logs import details_note
from specchat.paths import AppPaths

from .gui_gc import GuiThreadCollector
from .main_window import MainWindow

log = logging.getLogger(__name__)
WAKE_MS = 200


def run_app(target: str | None = None, draft: str | None = None, paths: AppPaths | None = None) -> int:
    """Open the main window (on a local model folder when given) and run until it closes."""
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName("SpecChat")
    app.setOrganizationName("SpecChat")
    wake = close_on_stop_signals(app)
    collector = GuiThreadCollector(app)  # no cycle holding a Qt object is collected on another thread
    try:
        window = MainWindow(paths, target=target, draft=draft)
    except Exception as error:  # a bug in building the window: say so in a dialog, never a bare traceback
        log.exception("the main window could not be built")
        QMessageBox.critical(None, "SpecChat could not start", f"{type(error).__name__}: {error}.{details_note()}")
        return 1
    window.show()
    status = app.exec()
    wake.stop()
    collector.stop()
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
