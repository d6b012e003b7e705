"""Start the desktop app: `specchat [--target DIR [--draft DIR]]`."""

from __future__ import annotations

import logging
import sys

from PySide6.QtWidgets import QApplication, QMessageBox

from specchat.logs import details_note
from specchat.paths import AppPaths

from .main_window import MainWindow

log = logging.getLogger(__name__)


def run_app(target: str | None = None, draft: str | None = None, paths: AppPaths | None = None) -> int:
    """Open the main window (on a local model folder when given) and run until it closes."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("SpecChat")
    app.setOrganizationName("SpecChat")
    try:
        window = MainWindow(paths, target=target, draft=draft)
    except Exception as error:  # a bug in building the window: say so in a dialog, never a bare traceback
        log.exception("the main window could not be built")
        QMessageBox.critical(None, "SpecChat could not start", f"{type(error).__name__}: {error}.{details_note()}")
        return 1
    window.show()
    return app.exec()
