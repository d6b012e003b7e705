"""The Server menu: serve the loaded pair to other tools on localhost (OpenAI-compatible, speculating,
sharing the chat's job queue), or use a SpecChat server elsewhere as the engine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction, QFontMetrics
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QSpinBox,
    QWidget,
)

from specchat.engine.config import GenerationConfig
from specchat.server.app import ServerOptions
from specchat.server.backend import EngineBackend
from specchat.server.request_log import RequestLog, RequestRecord
from specchat.server.request_summary import RequestSummary, count_text
from specchat.server.running import BackgroundServer

from .engine_client import EngineClient
from .plain_words import this_machine

LOCALHOST = "127.0.0.1"
CONNECT_TITLE = "Connect to a server"
SERVE_TITLE = "Serve on localhost"
DIALOG_MIN_WIDTH = 420  # the address and key placeholders show whole
# room a title bar takes beside its text: the close / minimise / zoom buttons, an icon and the margins
TITLE_BAR_ALLOWANCE = 160


def other_machine() -> str:
    """Another computer, as the app names this one: "another Mac" on macOS, "another computer" elsewhere."""
    return this_machine().replace("this ", "another ", 1)


def title_width(title: str) -> int:
    """The width a dialog needs for its whole title in the title bar (the title font is often bold)."""
    font = QApplication.font()
    font.setBold(True)
    return QFontMetrics(font).horizontalAdvance(title) + TITLE_BAR_ALLOWANCE


def fit_title(dialog: QDialog, title: str) -> None:
    """Set a dialog's window title and make it wide enough that the title bar never shortens it."""
    dialog.setWindowTitle(title)
    dialog.setMinimumWidth(max(DIALOG_MIN_WIDTH, title_width(title)))


@dataclass(frozen=True)
class ServeChoice:
    """What the serve dialog asks: the port and an optional API key."""

    port: int
    api_key: str | None


class ServerController(QObject):
    """Runs the API server on the client's engine host; relays its requests' events and records to the views.
    One request log serves every start of the server this session (written to log_file when given). The
    status bar's count is `summary`'s, the server log's totals (show_summary), not the backend's own count:
    it counts every request the log records, those refused before any generation included."""

    stateChanged = Signal(str)  # the status-bar text: "API http://127.0.0.1:8080/v1 · 3 requests · 1 failed", or ""
    failed = Signal(str)  # why the server could not start
    requestEvent = Signal(int, object)  # (job id, engine event) of an API request, on the UI thread
    requestLogged = Signal(object)  # a finished request's RequestRecord, on the UI thread
    _relay = Signal(int, object)
    _logged = Signal(object)

    def __init__(self, client: EngineClient, parent=None, log_file: Path | None = None):
        super().__init__(parent)
        self.client = client
        self.server: BackgroundServer | None = None
        self.backend: EngineBackend | None = None
        self.request_log = RequestLog(path=log_file)
        self.summary = RequestSummary()
        self._relay.connect(self._on_event, Qt.ConnectionType.QueuedConnection)
        self._logged.connect(self.requestLogged, Qt.ConnectionType.QueuedConnection)
        self.request_log.subscribe(self._record_added)

    @property
    def running(self) -> bool:
        """True while the API listens."""
        return self.server is not None

    def start(self, choice: ServeChoice, defaults: GenerationConfig) -> bool:
        """Listen on localhost; requests use `defaults` unless they say otherwise. False (and failed) on error."""
        self.stop()
        backend = EngineBackend(self.client.host)
        backend.observers.append(lambda job_id, event: self._relay.emit(job_id, event))
        try:
            options = ServerOptions(defaults, choice.api_key, request_log=self.request_log)
            server = BackgroundServer(backend, options, LOCALHOST, choice.port)
            server.start()
        except (OSError, RuntimeError, ValueError) as exc:
            self.failed.emit(f"The API server could not start on port {choice.port}: {exc}")
            self.stateChanged.emit("")
            return False
        self.server, self.backend = server, backend
        self.client.batch_rows = backend.max_batch  # the chat shares the API's batch while serving
        self._announce()
        return True

    def stop(self) -> None:
        """Stop listening (a request still running is cancelled by its client going away)."""
        if self.server is not None:
            self.server.stop()
            self.server = self.backend = None
        self.client.batch_rows = 1
        self.stateChanged.emit("")

    def close(self) -> None:
        """Stop serving and stop relaying records (the window is closing)."""
        self.stop()
        self.request_log.unsubscribe(self._record_added)

    def show_summary(self, summary: RequestSummary) -> None:
        """The server log's new totals (RequestLogModel.summaryChanged): the status bar says them."""
        self.summary = summary
        self._announce()

    def _record_added(self, record: RequestRecord) -> None:  # on the server's or the engine's thread
        self._logged.emit(record)

    def _on_event(self, job_id: int, event) -> None:
        self.requestEvent.emit(job_id, event)

    def _announce(self) -> None:
        if self.server is not None:
            self.stateChanged.emit(f"API {self.server.url}/v1 · {count_text(self.summary)}")


class ServerMenu(QMenu):
    """Serve on localhost (toggle), its port and key, Server log…, Connect to server…, Use local models."""

    serveToggled = Signal(bool)
    connectRequested = Signal(str, object)  # url, api key (or None)
    localRequested = Signal()
    logRequested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Se&rver", parent)
        self.serve_action = QAction("Serve on localhost", self, checkable=True)
        self.serve_action.setToolTip(
            "An OpenAI-compatible API at http://127.0.0.1:PORT/v1 for editors, agents and "
            "scripts; it speculates as the chat does and shares its queue"
        )
        self.serve_action.toggled.connect(self.serveToggled)
        self.log_action = QAction("Server log…", self)
        self.log_action.setToolTip(
            "Every request the local API served: client, route, status, tokens, speed, drafter and errors"
        )
        self.log_action.triggered.connect(self.logRequested)
        self.connect_action = QAction("Connect to server…", self)
        self.connect_action.setToolTip(
            f"Use a SpecChat server (python -m specchat serve) on {other_machine()} as the engine"
        )
        self.local_action = QAction("Use local models", self, enabled=False)
        self.local_action.triggered.connect(self.localRequested)
        self.connect_action.triggered.connect(self._ask_connect)
        self.addAction(self.serve_action)
        self.addAction(self.log_action)
        self.addSeparator()
        for action in (self.connect_action, self.local_action):
            self.addAction(action)

    def set_port(self, port: int) -> None:
        """Show the port in the menu text."""
        self.serve_action.setText(f"Serve on localhost:{port}")

    def set_remote(self, url: str | None) -> None:
        """Connected to a server (url) or using local models (None)."""
        self.local_action.setEnabled(url is not None)
        self.serve_action.setEnabled(url is None)  # a remote engine is not served on again

    def _ask_connect(self) -> None:
        dialog = ConnectDialog(self.parentWidget())
        if dialog.exec() == QDialog.DialogCode.Accepted:
            url, key = dialog.values()
            self.connectRequested.emit(url, key)


class ServeDialog(QDialog):
    """Port and API key for serving on localhost."""

    def __init__(self, port: int, api_key: str | None, parent=None):
        super().__init__(parent)
        fit_title(self, SERVE_TITLE)
        self.port = QSpinBox(minimum=1024, maximum=65535, value=port)
        self.key = QLineEdit(api_key or "", placeholderText=f"none (only {this_machine()} can connect)")
        form = QFormLayout(self)
        form.addRow("Port:", self.port)
        form.addRow("API key:", self.key)
        form.addRow(QLabel("Clients use http://127.0.0.1:PORT/v1 with any OpenAI client."))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def values(self) -> ServeChoice:
        """The port and key chosen."""
        return ServeChoice(self.port.value(), self.key.text().strip() or None)


class ConnectDialog(QDialog):
    """The server's address and its API key."""

    def __init__(self, parent=None, url: str = "", api_key: str | None = None):
        super().__init__(parent)
        fit_title(self, CONNECT_TITLE)
        self.heading = QLabel(f"Use a SpecChat server on {other_machine()} as the engine.")
        self.heading.setWordWrap(True)
        self.url = QLineEdit(url, placeholderText="http://studio.local:8080")
        self.key = QLineEdit(api_key or "", placeholderText="the key the server was started with")
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        form = QFormLayout(self)
        form.addRow(self.heading)
        form.addRow("Address:", self.url)
        form.addRow("API key:", self.key)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def values(self) -> tuple[str, str | None]:
        """The address (http:// added when missing) and the key."""
        url = self.url.text().strip()
        if url and "://" not in url:
            url = "http://" + url
        return url, self.key.text().strip() or None
