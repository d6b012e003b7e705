"""The first window: shown within a second of start, in the main window's place, size and colours, while
the main window (the engine, MLX, pyqtgraph, FastAPI: seconds of imports) is built behind it.

It reads the saved settings without writing anything (a bad file is the main window's to report and set
aside) and imports nothing but Qt and the theme.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import sys
import time

from PySide6.QtCore import QByteArray, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QGuiApplication
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMainWindow, QVBoxLayout, QWidget

from specchat.paths import AppPaths

from . import theme
from .screen_fit import fit_to_screen
from .theme_switch import SCHEMES, switch

log = logging.getLogger(__name__)
DEFAULT_SIZE = (1280, 820)  # the main window's first size too
SIDEBAR_WIDTH, PANEL_WIDTH = 250, 270  # the main window's columns at its default size
TITLE_GROWTH_PT = 8  # as the empty chat's "Start a conversation"
MARK_ENV = "SPECCHAT_FIRST_WINDOW_MARK"  # set to 1: print when the first and the main window are painted
HEAVY_MODULES = ("mlx", "mlx_lm", "transformers", "pyqtgraph", "fastapi", "specchat.engine.engine")


class FirstWindow(QMainWindow):
    """The main window's outline (conversation list, chat column, settings panel) and 'Starting SpecChat…'."""

    painted = Signal()  # once, after the first paint (queued: the frame is on the screen by then)

    def __init__(self, paths: AppPaths):
        super().__init__()
        self._painted = False
        look = saved_look(paths)
        switch().set_choice(look.get("theme", "system"))  # the main window applies the same choice
        self.setWindowTitle("SpecChat")
        self.setStyleSheet(theme.style_sheet())
        self.setCentralWidget(_outline())
        geometry = look.get("window_geometry")
        if not (geometry and self.restoreGeometry(QByteArray(base64.b64decode(geometry)))):
            fit_to_screen(self, QSize(*DEFAULT_SIZE))

    def paintEvent(self, event) -> None:
        super().paintEvent(event)
        if not self._painted:
            self._painted = True
            mark("first-window")
            QTimer.singleShot(0, self.painted.emit)


def _outline() -> QWidget:
    """Three empty columns in the main window's colours, the middle one saying SpecChat is starting."""
    outline = QWidget()
    row = QHBoxLayout(outline)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(0)
    sidebar = QWidget(objectName="sidebar", minimumWidth=SIDEBAR_WIDTH, maximumWidth=SIDEBAR_WIDTH)  # type: ignore[call-arg]
    center = QWidget(objectName="centralArea")  # type: ignore[call-arg]
    panel = QWidget(objectName="settingsPanel", minimumWidth=PANEL_WIDTH, maximumWidth=PANEL_WIDTH)  # type: ignore[call-arg]
    for widget in (sidebar, center, panel):
        widget.setAttribute(Qt.WidgetAttribute.WA_StyledBackground)
        row.addWidget(widget, 1 if widget is center else 0)
    words = QLabel("Starting SpecChat…", alignment=Qt.AlignmentFlag.AlignCenter)
    words.setObjectName("emptyTitle")
    font = QFont(QGuiApplication.font())
    font.setPointSizeF(font.pointSizeF() + TITLE_GROWTH_PT)
    words.setFont(font)
    QVBoxLayout(center).addWidget(words)
    return outline


def saved_look(paths: AppPaths) -> dict[str, str]:
    """The saved theme and window geometry, each only when it is well formed; {} for no or a bad file."""
    try:
        data = json.loads(paths.settings_file.read_bytes().decode("utf-8"))
    except (OSError, ValueError):  # missing, unreadable, not UTF-8, not JSON: the main window says which
        return {}
    if not isinstance(data, dict):
        return {}
    look = {}
    if data.get("theme") in SCHEMES:
        look["theme"] = data["theme"]
    geometry = data.get("window_geometry")
    if isinstance(geometry, str):
        try:
            base64.b64decode(geometry, validate=True)
            look["window_geometry"] = geometry
        except (binascii.Error, ValueError):
            pass
    return look


def mark(what: str) -> None:
    """With SPECCHAT_FIRST_WINDOW_MARK=1, one line on stderr: what was painted, the monotonic clock (as
    time.monotonic(), so a parent process can subtract its own start time) and the heavy modules loaded."""
    if os.environ.get(MARK_ENV) != "1":
        return
    loaded = ",".join(name for name in HEAVY_MODULES if name in sys.modules) or "none"
    print(f"specchat-mark {what} {time.monotonic():.4f} heavy={loaded}", file=sys.stderr, flush=True)
