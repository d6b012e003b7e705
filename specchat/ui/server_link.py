"""The main window's link to the API server: the Server menu, the status-bar address and request
count, API requests on the dashboard, the server log window, and "Connect to server…" (a server elsewhere
as the engine). The API's totals have one source, the server log's records (RequestLogModel.summary): the
status bar and the dashboard's API line both read them."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QDialog, QLabel

from specchat.engine.errors import RemoteError
from specchat.server.connect import connect_job
from specchat.server.remote import RemoteEngine, RemoteStatus
from specchat.server.request_log import REQUEST_LOG_NAME
from specchat.server.request_summary import summary_tooltip

from .server_log_model import RequestLogModel
from .server_log_window import ServerLogWindow
from .server_menu import ServeChoice, ServeDialog, ServerController, ServerMenu
from .tasks import TaskRunner

if TYPE_CHECKING:
    from .main_window import MainWindow


LABEL_TIP = "The local API: what it listens on and the requests it served this session, from the server log"
STATUS_POLL_MS = 5000  # how often a connected server's ranks and memory are read

log = logging.getLogger(__name__)


class RemoteStatusPoller(QObject):
    """Reads a connected server's status on the worker pool every few seconds (ranks, memory, degraded)."""

    status = Signal(object)  # RemoteStatus

    def __init__(self, runner: TaskRunner, parent: QObject | None = None):
        super().__init__(parent)
        self.runner = runner
        self.remote: RemoteEngine | None = None
        self._busy = False
        self._unreadable_said = False  # a server that keeps sending a malformed status is said once
        self.timer = QTimer(self, interval=STATUS_POLL_MS, timeout=self.poll)  # type: ignore[call-arg]

    def follow(self, remote: RemoteEngine | None) -> None:
        """Poll this server (None: stop)."""
        self.remote = remote
        if remote is None:
            self.timer.stop()
        else:
            self.timer.start()
            self.poll()

    def poll(self) -> None:
        """One status read on the pool (skipped while the previous one is still out)."""
        remote = self.remote
        if remote is None or self._busy:
            return
        self._busy = True
        self.runner.run(lambda: read_status(remote), self._arrived, self._unreadable)

    def _arrived(self, status: RemoteStatus | None) -> None:
        self._busy = False
        if status is not None and self.remote is not None and status.url == self.remote.url:
            self._unreadable_said = False
            self.status.emit(status)

    def _unreadable(self, message: str) -> None:
        """An answer that is not a status (a malformed body, a bug): said once, and the next poll tries again."""
        self._busy = False
        if not self._unreadable_said:
            self._unreadable_said = True
            log.warning("the server's status could not be read (%s); polling goes on", message)


def read_status(remote: RemoteEngine) -> RemoteStatus | None:
    """The server's status; None while it cannot be reached (the next poll tries again)."""
    try:
        return remote.status()
    except (RemoteError, RuntimeError):
        return None


class ServerLink(QObject):
    """Owns the Server menu and controller for `window` (a MainWindow)."""

    def __init__(self, window: MainWindow):
        super().__init__(window)
        self.window = window
        self.menu = ServerMenu(window)
        self.menu.set_port(window.settings.server_port)
        self.controller = ServerController(window.client, self, window.paths.log_dir / REQUEST_LOG_NAME)
        self.requests = RequestLogModel(parent=self)  # fed from the start: the window may open any time
        self.log_window: ServerLogWindow | None = None
        self.label = QLabel(objectName="footer")  # type: ignore[call-overload]
        self.label.setToolTip(LABEL_TIP)
        window.statusBar().addPermanentWidget(self.label)
        self.label.hide()
        self.menu.serveToggled.connect(self._serve_toggled)
        self.menu.connectRequested.connect(self.connect_to)
        self.menu.localRequested.connect(self._use_local)
        self.menu.logRequested.connect(self.show_log)
        dashboard = window.docks.dashboard
        self.controller.requestLogged.connect(self.requests.add)
        self.requests.summaryChanged.connect(self.controller.show_summary)
        self.requests.summaryChanged.connect(dashboard.on_api_summary)
        self.controller.stateChanged.connect(self._state)
        self.controller.failed.connect(self._failed)
        self.controller.requestEvent.connect(dashboard.on_api_event)
        dashboard.api_line.logRequested.connect(self.show_log)
        self.poller = RemoteStatusPoller(window.client.tasks, self)
        self.poller.status.connect(lambda st: window.docks.dashboard.set_cluster(st.ranks, st.degraded))

    def serve(self, choice: ServeChoice) -> bool:
        """Start serving with the chat's current speculation and sampling as the requests' defaults."""
        cfg, _thinking = self.window.reply_settings()
        started = self.controller.start(choice, cfg)
        self.menu.serve_action.blockSignals(True)
        self.menu.serve_action.setChecked(started)
        self.menu.serve_action.blockSignals(False)
        return started

    def show_log(self) -> ServerLogWindow:
        """Open the server log window (or bring it forward), live as requests finish."""
        if self.log_window is None:
            self.log_window = ServerLogWindow(self.requests, self.controller.request_log.path, self.window)
        self.log_window.show()
        self.log_window.raise_()
        self.log_window.activateWindow()
        return self.log_window

    def connect_to(self, url: str, api_key: str | None) -> None:
        """Use the server at url as the engine (loaded / loadFailed follow, as for a local pair)."""
        window = self.window
        window.settings.server_url = url
        window.model_bar.set_loading(f"Connecting to {url}…")
        window.composer.set_ready(False, "Connecting to the server")
        window.client.load_with(url, connect_job(url, api_key))

    def stop(self) -> None:
        """Stop serving, relaying and polling (window closing)."""
        self.controller.close()
        if self.log_window is not None:
            self.log_window.close()
        self.poller.follow(None)

    def loaded(self, pair) -> None:
        """A pair is in use: poll its server while it is remote; a local pair shows no ranks."""
        self.menu.set_remote(pair.remote)
        engine = self.window.client.host.engine
        self.poller.follow(engine if pair.remote and isinstance(engine, RemoteEngine) else None)
        if not pair.remote:
            self.window.docks.dashboard.set_cluster(())

    def _serve_toggled(self, on: bool) -> None:
        if not on:
            self.controller.stop()
            return
        s = self.window.settings
        dialog = ServeDialog(s.server_port, s.server_api_key, self.window)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            self.menu.serve_action.setChecked(False)
            return
        choice = dialog.values()
        s.server_port, s.server_api_key = choice.port, choice.api_key
        self.menu.set_port(choice.port)
        self.window.save()
        self.serve(choice)

    def _use_local(self) -> None:
        s = self.window.settings
        if s.target_path:
            self.window.load_models(s.target_path, s.draft_path, s.dflash_path)

    def _state(self, text: str) -> None:
        self.label.setText(text)
        self.label.setToolTip(f"{LABEL_TIP}.\n\n{summary_tooltip(self.requests.summary)}")
        self.label.setVisible(bool(text))
        self.window.docks.dashboard.api_line.set_serving(bool(text))

    def _failed(self, message: str) -> None:
        self.menu.serve_action.setChecked(False)
        self.window.banner.show_message(message, "error")
