"""The Preferences dialog (Cmd+, on macOS, Ctrl+, elsewhere): default sampling, context length, send key, theme,
data folder, power policy, the dashboard's charts and the MCP servers the chat's tools come from. OK applies,
Cancel keeps everything as it was."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QTimer, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from specchat.engine.config import LIMITS, SAMPLING_FIELDS
from specchat.mcp_host import ServerSpec, ServerStatus
from specchat.settings import Settings
from specchat.settings_checks import DASHBOARD_CHARTS

from .chat.tool_card import ToolRound
from .context_length_box import ContextLengthBox
from .settings_panel import limited_spin_box
from .theme_switch import SCHEME_LABELS

SEND_KEYS = {True: "Enter sends, Shift+Enter starts a new line", False: "Shift+Enter sends, Enter starts a new line"}
POWER_LABELS = {
    "ignore": "Speculate as on mains power",
    "warn": "Say once that speeds vary on battery",
    "plain_on_battery": "Plain decoding on battery (no draft work)",
}
CHART_LABELS = {"throughput": "Decode speed", "acceptance": "Acceptance", "memory": "Memory", "power": "Power"}
SAMPLING_LABELS = {
    "temperature": "Temperature",
    "top_p": "Top-p",
    "top_k": "Top-k",
    "min_p": "Min-p",
    "max_tokens": "Max tokens",
}
MCP_STATUS_MS = 1000  # the MCP servers' statuses are read again this often while the dialog is open
NEXT_START = "A new data folder is used from the next start; the current one is not moved."


class PreferencesDialog(QDialog):
    """Edits a copy of the preferences; values() holds the chosen Settings field values."""

    def __init__(self, settings: Settings, data_dir: Path, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Preferences")
        self.setObjectName("preferences")
        self.current_data_dir = Path(data_dir)
        self.data_dir: str | None = settings.data_dir
        layout = QVBoxLayout(self)
        layout.addWidget(self._chat_group(settings))
        layout.addWidget(self._look_group(settings))
        layout.addWidget(self._dashboard_group(settings))
        layout.addWidget(self._mcp_group(settings))
        layout.addWidget(self._data_group())
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def _chat_group(self, settings: Settings) -> QGroupBox:
        group = QGroupBox("Chat")
        form = QFormLayout(group)
        self.send_key = _combo(SEND_KEYS, settings.enter_sends)
        form.addRow("Send key", self.send_key)
        self.sampling = {}
        for name in SAMPLING_FIELDS:
            box = limited_spin_box(LIMITS[name])
            box.setValue(getattr(settings, name))
            self.sampling[name] = box
            form.addRow(f"Default {SAMPLING_LABELS.get(name, name).lower()}", box)
        self.context_length = ContextLengthBox(settings.context_length)
        form.addRow("Context length", self.context_length)
        return group

    def _look_group(self, settings: Settings) -> QGroupBox:
        group = QGroupBox("Appearance and power")
        form = QFormLayout(group)
        self.theme = _combo(SCHEME_LABELS, settings.theme)
        self.theme.setToolTip("Follow the system's light or dark appearance, or keep one")
        form.addRow("Theme", self.theme)
        self.power = _combo(POWER_LABELS, settings.power_policy)
        self.power.setToolTip("What speculative decoding does while the machine runs on battery")
        form.addRow("On battery", self.power)
        return group

    def _dashboard_group(self, settings: Settings) -> QGroupBox:
        group = QGroupBox("Dashboard charts")
        row = QHBoxLayout(group)
        self.charts = {}
        for name in DASHBOARD_CHARTS:
            box = QCheckBox(CHART_LABELS[name], checked=name in settings.dashboard_charts)  # type: ignore[call-overload]
            self.charts[name] = box
            row.addWidget(box)
        row.addStretch(1)
        return group

    def _mcp_group(self, settings: Settings) -> QGroupBox:
        group = QGroupBox("MCP servers (tools the model may ask to run)")
        column = QVBoxLayout(group)
        self.mcp_list = QListWidget()
        self.mcp_list.setObjectName("mcpServers")
        self.mcp_list.setMaximumHeight(110)
        self.mcp_servers = [dict(entry) for entry in settings.mcp_servers]
        rows = QWidget()
        row = QHBoxLayout(rows)
        row.setContentsMargins(0, 0, 0, 0)
        self.mcp_name = QLineEdit(placeholderText="Name")
        self.mcp_where = QLineEdit(placeholderText="Command line (stdio) or http(s):// URL")
        self.mcp_add = QPushButton("Add")
        self.mcp_add.clicked.connect(self._add_mcp_server)
        self.mcp_remove = QPushButton("Remove")
        self.mcp_remove.clicked.connect(self._remove_mcp_server)
        row.addWidget(self.mcp_name, 1)
        row.addWidget(self.mcp_where, 3)
        row.addWidget(self.mcp_add)
        row.addWidget(self.mcp_remove)
        self.mcp_problem = QLabel(wordWrap=True)
        self.mcp_problem.setVisible(False)
        column.addWidget(self.mcp_list)
        column.addWidget(rows)
        column.addWidget(self.mcp_problem)
        self._show_mcp_servers()
        self.mcp_timer = QTimer(self, interval=MCP_STATUS_MS)
        self.mcp_timer.timeout.connect(self._show_mcp_statuses)  # connecting… becomes ready, N tools
        self.mcp_timer.start()
        self.accepted.connect(self._restart_mcp_later)
        return group

    def _tool_round(self) -> ToolRound | None:
        parent = self.parent()
        return parent.findChild(ToolRound) if parent is not None else None

    def _mcp_statuses(self) -> dict[str, ServerStatus]:
        """What the chat's McpHost says of each server (none before it started)."""
        tool_round = self._tool_round()
        host = tool_round.host if tool_round is not None else None
        return {status.name: status for status in host.statuses()} if host is not None else {}

    def _show_mcp_servers(self) -> None:
        row = self.mcp_list.currentRow()
        self.mcp_list.clear()
        for _entry in self.mcp_servers:
            self.mcp_list.addItem(QListWidgetItem())
        self._show_mcp_statuses()
        self.mcp_list.setCurrentRow(min(row, self.mcp_list.count() - 1))
        self.mcp_remove.setEnabled(bool(self.mcp_servers))

    def _show_mcp_statuses(self) -> None:
        """Each server's line: name, command or URL, status and tool count."""
        statuses = self._mcp_statuses()
        for row, entry in enumerate(self.mcp_servers):
            spec = ServerSpec.from_dict(entry)
            status = statuses.get(spec.name)
            said = status.describe() if status is not None else "starts when the chat next needs it"
            item = self.mcp_list.item(row)
            if item is not None:
                item.setText(f"{spec.name} — {spec.where()} — {said}")
                item.setToolTip(said)

    def _restart_mcp_later(self) -> None:
        """After OK has stored the servers: start the new list (the chat's McpHost follows the settings)."""
        tool_round = self._tool_round()
        if tool_round is not None:
            QTimer.singleShot(0, tool_round, tool_round.mcp)

    def _add_mcp_server(self) -> None:
        name, where = self.mcp_name.text().strip(), self.mcp_where.text().strip()
        problem = None
        if not name or not where:
            problem = "A server needs a name and a command line or URL."
        elif any(entry["name"] == name for entry in self.mcp_servers):
            problem = f"There is already a server named {name}."
        self.mcp_problem.setText(problem or "")
        self.mcp_problem.setVisible(problem is not None)
        if problem:
            return
        url = where.startswith(("http://", "https://"))
        self.mcp_servers.append({"name": name, "url" if url else "command": where, "always_allow": []})
        self.mcp_name.clear()
        self.mcp_where.clear()
        self._show_mcp_servers()

    def _remove_mcp_server(self) -> None:
        row = self.mcp_list.currentRow()
        if 0 <= row < len(self.mcp_servers):
            del self.mcp_servers[row]
            self._show_mcp_servers()

    def _data_group(self) -> QGroupBox:
        group = QGroupBox("Data folder (conversations, tuning results)")
        column = QVBoxLayout(group)
        self.data_label = QLabel(wordWrap=True)
        buttons = QWidget()
        row = QHBoxLayout(buttons)
        row.setContentsMargins(0, 0, 0, 0)
        self.open_button = QPushButton("Open")
        self.open_button.setToolTip("Show the folder in the file manager")
        self.open_button.clicked.connect(
            lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.current_data_dir)))
        )
        change = QPushButton("Change…")
        change.clicked.connect(self._choose_data_dir)
        self.default_button = QPushButton("Use the default")
        self.default_button.clicked.connect(lambda: self._set_data_dir(None))
        for button in (self.open_button, change, self.default_button):
            row.addWidget(button)
        row.addStretch(1)
        column.addWidget(self.data_label)
        column.addWidget(buttons)
        self._set_data_dir(self.data_dir)
        return group

    def _choose_data_dir(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Choose a data folder", str(self.current_data_dir))
        if folder:
            self._set_data_dir(folder)

    def _set_data_dir(self, folder: str | None) -> None:
        self.data_dir = folder
        text = str(self.current_data_dir)
        if folder and Path(folder).expanduser() != self.current_data_dir:
            text += f"\nFrom the next start: {folder}. {NEXT_START}"
        self.data_label.setText(text)
        self.default_button.setEnabled(folder is not None)

    def values(self) -> dict[str, object]:
        """The chosen preferences as Settings field values."""
        values: dict[str, object] = {name: box.value() for name, box in self.sampling.items()}
        values.update(
            context_length=self.context_length.value(),
            enter_sends=self.send_key.currentData(),
            theme=self.theme.currentData(),
            power_policy=self.power.currentData(),
            data_dir=self.data_dir,
            dashboard_charts=[name for name, box in self.charts.items() if box.isChecked()],
            mcp_servers=[dict(entry) for entry in self.mcp_servers],
        )
        return values


def _combo(labels: dict, current) -> QComboBox:
    combo = QComboBox()
    for value, label in labels.items():
        combo.addItem(label, value)
    combo.setCurrentIndex(max(0, combo.findData(current)))
    return combo
