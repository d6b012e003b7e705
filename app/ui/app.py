"""Start the desktop app: `specchat [--target DIR [--draft DIR]]`."""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QApplication

from app.paths import AppPaths

from .main_window import MainWindow


def run_app(target: str | None = None, draft: str | None = None, paths: AppPaths | None = None) -> int:
    """Open the main window (on a local model folder when given) and run until it closes."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("SpecChat")
    app.setOrganizationName("SpecChat")
    window = MainWindow(paths, target=target, draft=draft)
    window.show()
    return app.exec()
