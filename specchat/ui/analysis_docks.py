"""The Dashboard and Sweep docks beside the chat, wired to the engine client.

Sweeps, A/B comparisons and the plain-decode measurement are jobs on the engine's queue like a
reply: one started while something else runs waits its turn.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow, QWidget

from specchat.paths import AppPaths

from .dashboard import Dashboard, SweepView
from .engine_client import EngineClient, LoadedPair
from .screen_fit import available, fit_to_screen, keep_on_screen, largest_size

DASHBOARD_SHORTCUT = "Ctrl+Shift+B"
SWEEP_SHORTCUT = "Ctrl+Shift+K"
MEASURING = "Measuring plain-decode speed…"
CHAT_ROOM = 200  # width the chat column gets beyond its minimum when a dock sits beside it (other windows)
CHAT_MIN = 480  # the chat column keeps this much beside a dock
DOCK_WIDTH = 560  # a dock beside the chat grows to this when the window has room
CHAT_COMFORT = 640  # beside a dock, the side columns narrow (to their minimum at most) to give the chat this
DOCK_SEPARATOR = 6  # the splitter between the central widget and a dock


class AnalysisDocks(QObject):
    """Owns the Dashboard and SweepView docks; the window calls set_loaded when a pair is ready."""

    bestKSaved = Signal(object)  # dict[str, int], from the sweep view
    baselineMeasured = Signal(str, float)  # model key, tok/s (after the dashboard stored it)

    def __init__(
        self,
        window: QMainWindow,
        paths: AppPaths,
        client: EngineClient,
        dashboard: Dashboard | None = None,
        sweep_view: SweepView | None = None,
    ):
        super().__init__(window)
        self.main_window, self.client = window, client
        self.dashboard = dashboard or Dashboard(paths, runner=client.tasks)
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
        self._remember_sweep_controls()

    def _connect(self) -> None:
        client = self.client
        client.event.connect(self.dashboard.on_request_event)
        client.baselineMeasured.connect(self._baseline_measured)
        client.baselineFailed.connect(self._baseline_failed)
        self.dashboard.baselineRequested.connect(self.request_baseline)
        self.sweep_view.bestKSaved.connect(self.bestKSaved)

    def _remember_sweep_controls(self) -> None:
        """The sweep's controls come back as they were left (kept in the window's settings, when it has any)."""
        settings = getattr(self.main_window, "settings", None)
        if settings is None:
            return
        self.sweep_view.set_controls(settings.sweep_controls)

        def changed(values: dict) -> None:
            settings.sweep_controls = values
            self.main_window.save()  # type: ignore[attr-defined]  # MainWindow, the one window with settings

        self.sweep_view.controlsChanged.connect(changed)

    def _toggle(self, dock: QDockWidget, text: str, shortcut: str) -> QAction:
        """The dock's show/hide action; showing raises its tab and makes room for it beside the chat."""
        action = dock.toggleViewAction()
        action.setText(text)
        action.setShortcut(QKeySequence(shortcut))
        action.setToolTip(f"Show or hide the {dock.windowTitle()} ({shortcut})")
        action.triggered.connect(lambda checked: self.show_dock(dock) if checked else None)
        return action

    def show_dock(self, dock: QDockWidget) -> None:
        """Show a dock on top of its tab group beside the chat; float it when the screen has no room.
        Decided before showing it: a docked dock that does not fit would widen the window past the screen."""
        window, need = self.main_window, self.width_beside(dock)
        screen = _screen(window)
        too_narrow = window.width() < need and screen is not None and need > largest_size(window, screen).width()
        if too_narrow and not dock.isFloating():
            _float_beside(dock, window, screen)
        dock.show()
        dock.raise_()
        if dock.isFloating():
            return
        if window.width() < need:
            window.resize(need, window.height())
            if screen is not None:
                keep_on_screen(window, screen)
        # after the dock joined the layout; resizing it before has no effect
        QTimer.singleShot(0, lambda: self._share_width(dock))

    def _share_width(self, dock: QDockWidget) -> None:
        """The dock gets its minimum and half the width beyond the chat column's CHAT_MIN (up to DOCK_WIDTH);
        then the side columns narrow (not below their minimum) so the chat column has at least CHAT_MIN."""
        window = self.main_window
        if dock.isFloating() or not dock.isVisible():
            return
        least = dock.minimumSizeHint().width()
        room = window.width() - self._central_need() - DOCK_SEPARATOR
        width = min(DOCK_WIDTH, max(least, least + (room - least) // 2))
        window.resizeDocks([dock], [width], Qt.Orientation.Horizontal)
        make_room = getattr(window, "make_chat_room", None)
        if make_room is not None:  # once the central widget has its new width
            QTimer.singleShot(0, lambda: make_room(CHAT_COMFORT))

    def _central_need(self) -> int:
        """The central widget's width with the chat column at CHAT_MIN."""
        need = getattr(self.main_window, "chat_column_need", None)
        if need is not None:
            return need(CHAT_MIN)
        return self._central().minimumSizeHint().width() + CHAT_ROOM

    def _central(self) -> QWidget:
        """The window's central widget (MainWindow's splitter, set before any dock is shown)."""
        central = self.main_window.centralWidget()
        assert central is not None
        return central

    def width_beside(self, dock: QDockWidget) -> int:
        """The window width that fits the chat (at least CHAT_MIN wide) and the dock side by side."""
        return self._central_need() + DOCK_SEPARATOR + dock.minimumSizeHint().width()

    def first_start_layout(self) -> None:
        """No saved layout: the dashboard beside the chat when the screen is wide enough, else hidden."""
        self.sweep_dock.hide()
        window, screen = self.main_window, _screen(self.main_window)
        if screen is not None and largest_size(window, screen).width() >= self.width_beside(self.dashboard_dock):
            fit_to_screen(window, QSize(window.width() + DOCK_WIDTH, window.height()), screen)  # room to spare
            self.show_dock(self.dashboard_dock)
        else:
            self.dashboard_dock.hide()

    def fit_restored_layout(self) -> None:
        """A saved layout (from a wider screen, or a dock dragged wide) that leaves the chat column under
        CHAT_MIN: share the width again, or float the dock when the screen has no room for both."""
        for dock in (self.dashboard_dock, self.sweep_dock):
            squeezed = self._central().width() < self._central_need()
            if dock.isVisible() and not dock.isFloating() and squeezed:
                self.show_dock(dock)

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
    return available(window)


def _float_beside(dock: QDockWidget, window: QWidget, screen) -> None:
    """Float a dock as its own window over the right part of the main window (on a narrow screen)."""
    dock.setFloating(True)
    hint, least = dock.sizeHint(), dock.minimumSizeHint()
    width = max(least.width(), min(hint.width(), DOCK_WIDTH))
    height = max(least.height(), min(hint.height(), window.height()))
    if screen is not None:
        width, height = min(width, screen.width()), min(height, screen.height())
    dock.resize(width, height)
    right = window.frameGeometry().right() if screen is None else min(window.frameGeometry().right(), screen.right())
    top = window.y() if screen is None else min(max(window.y(), screen.top()), screen.bottom() - height)
    dock.move(max(right - width, 0 if screen is None else screen.left()), top)


def _dock(title: str, name: str, widget) -> QDockWidget:
    dock = QDockWidget(title)
    dock.setObjectName(name)  # saveState()/restoreState() find docks by name
    dock.setWidget(widget)
    dock.setAllowedAreas(Qt.DockWidgetArea.AllDockWidgetAreas)
    return dock
