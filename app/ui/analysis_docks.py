"""The Dashboard and Sweep docks beside the chat, wired to the engine client.

Sweeps, A/B comparisons and the plain-decode measurement are jobs on the engine's queue like a
reply: one started while something else runs waits its turn.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow, QWidget

from app.paths import AppPaths

from .dashboard import Dashboard, SweepView
from .engine_client import EngineClient
from .worker import LoadedPair

DASHBOARD_SHORTCUT = "Ctrl+Shift+B"
SWEEP_SHORTCUT = "Ctrl+Shift+K"
MEASURING = "Measuring plain-decode speed…"
CHAT_ROOM = 200  # width the chat column gets beyond its minimum when a dock sits beside it


class AnalysisDocks(QObject):
    """Owns the Dashboard and SweepView docks; the window calls set_loaded when a pair is ready."""

    bestKSaved = Signal(object)    # dict[str, int], from the sweep view
    baselineMeasured = Signal(str, float)  # model key, tok/s (after the dashboard stored it)

    def __init__(self, window: QMainWindow, paths: AppPaths, client: EngineClient,
                 dashboard: Dashboard | None = None, sweep_view: SweepView | None = None):
        super().__init__(window)
        self.main_window, self.client = window, client
        self.dashboard = dashboard or Dashboard(paths)
        self.sweep_view = sweep_view or SweepView(paths)
        self.sweep_view.set_client(client)
        self.dashboard_dock = _dock("Dashboard", "dashboardDock", self.dashboard)
        self.sweep_dock = _dock("Sweep and A/B", "sweepDock", self.sweep_view)
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.dashboard_dock)
        window.tabifyDockWidget(self.dashboard_dock, self.sweep_dock)
        self.dashboard_action = self._toggle(self.dashboard_dock, "&Dashboard", DASHBOARD_SHORTCUT)
        self.sweep_action = self._toggle(self.sweep_dock, "&Sweep and A/B", SWEEP_SHORTCUT)
        self.measuring: str | None = None  # model key whose measurement is queued or running
        self._connect()

    def _connect(self) -> None:
        worker = self.client.worker
        worker.event.connect(self.dashboard.on_worker_event)
        worker.baselineMeasured.connect(self._baseline_measured)
        worker.baselineFailed.connect(self._baseline_failed)
        self.dashboard.baselineRequested.connect(self.request_baseline)
        self.sweep_view.bestKSaved.connect(self.bestKSaved)

    def _toggle(self, dock: QDockWidget, text: str, shortcut: str) -> QAction:
        """The dock's show/hide action; showing raises its tab and makes room for it beside the chat."""
        action = dock.toggleViewAction()
        action.setText(text)
        action.setShortcut(QKeySequence(shortcut))
        action.setToolTip(f"Show or hide the {dock.windowTitle()} ({shortcut})")
        action.triggered.connect(lambda checked: self.show_dock(dock) if checked else None)
        return action

    def show_dock(self, dock: QDockWidget) -> None:
        """Show a dock on top of its tab group beside the chat; float it when the screen has no room."""
        dock.show()
        dock.raise_()
        if dock.isFloating():
            return
        window, need = self.main_window, self.width_beside(dock)
        if window.width() < need:
            screen = _screen(window)
            if screen is None or screen.width() < need:
                _float_beside(dock, window, screen)
                return
            window.resize(need, window.height())
            if window.frameGeometry().right() > screen.right():
                window.move(max(screen.left(), screen.right() - window.frameGeometry().width()), window.y())
        width = dock.minimumSizeHint().width()
        # after the dock joined the layout; resizing it before has no effect
        QTimer.singleShot(0, lambda: window.resizeDocks([dock], [width], Qt.Orientation.Horizontal))

    def width_beside(self, dock: QDockWidget) -> int:
        """The window width that fits the chat and the dock side by side."""
        central = self.main_window.centralWidget().minimumSizeHint().width()
        return central + CHAT_ROOM + dock.minimumSizeHint().width()

    def first_start_layout(self) -> None:
        """No saved layout: the dashboard beside the chat when the screen is wide enough, else hidden."""
        self.sweep_dock.hide()
        screen = _screen(self.main_window)
        if screen is not None and screen.width() >= self.width_beside(self.dashboard_dock):
            self.show_dock(self.dashboard_dock)
        else:
            self.dashboard_dock.hide()

    # --- the loaded pair ---

    def set_loaded(self, pair: LoadedPair | None) -> None:
        """A pair is ready (None: the load failed, the previous pair, if any, stays)."""
        if pair is None:
            return
        self.sweep_view.set_pair(pair)
        self.dashboard.set_weights_bytes(pair.memory_bytes)
        self.dashboard.set_model(pair.target)  # may ask for a baseline measurement

    def request_baseline(self, model_key: str) -> None:
        """Queue a measurement of a target's plain-decode speed on the engine thread."""
        self.measuring = model_key
        self.dashboard.status.setText(MEASURING)
        self.client.measure_baseline(model_key)

    def _baseline_measured(self, model_key: str, tps: float) -> None:
        self.measuring = None
        self.dashboard.set_baseline_tps(model_key, tps)
        if self.dashboard.status.text() == MEASURING:
            self.dashboard.status.setText(f"Plain decode measured: {tps:.1f} tok/s.")
        self.baselineMeasured.emit(model_key, tps)

    def _baseline_failed(self, model_key: str, message: str) -> None:
        self.measuring = None
        if self.dashboard.status.text() == MEASURING:
            self.dashboard.status.setText(f"Plain-decode measurement failed: {message}")

    # --- shutting down ---

    def stop(self) -> None:
        """Stop the dashboard's timers and cancel a sweep or A/B comparison still queued or running."""
        self.dashboard.stop()
        self.sweep_view.cancel()
        self.sweep_view.ab.cancel()


def _screen(window: QWidget):
    """The available geometry of the window's screen, or None."""
    screen = window.screen()
    return screen.availableGeometry() if screen is not None else None


def _float_beside(dock: QDockWidget, window: QWidget, screen) -> None:
    """Float a dock as its own window over the right part of the main window (on a narrow screen)."""
    dock.setFloating(True)
    hint = dock.sizeHint()
    width = hint.width() if screen is None else min(hint.width(), screen.width())
    height = window.height() if screen is None else min(max(hint.height(), 640), screen.height())
    dock.resize(width, height)
    right = window.frameGeometry().right() if screen is None else min(window.frameGeometry().right(),
                                                                      screen.right())
    dock.move(max(right - width, 0 if screen is None else screen.left()), window.y())


def _dock(title: str, name: str, widget) -> QDockWidget:
    dock = QDockWidget(title)
    dock.setObjectName(name)  # saveState()/restoreState() find docks by name
    dock.setWidget(widget)
    dock.setAllowedAreas(Qt.DockWidgetArea.AllDockWidgetAreas)
    return dock
