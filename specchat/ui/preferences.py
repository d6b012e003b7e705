"""The Preferences dialog (Cmd+, on macOS, Ctrl+, elsewhere): default sampling, send key, theme,
data folder, power policy and the dashboard's charts. OK applies, Cancel keeps everything as it was."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QUrl
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
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from specchat.engine.config import LIMITS, SAMPLING_FIELDS
from specchat.settings import DASHBOARD_CHARTS, Settings

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
            enter_sends=self.send_key.currentData(),
            theme=self.theme.currentData(),
            power_policy=self.power.currentData(),
            data_dir=self.data_dir,
            dashboard_charts=[name for name, box in self.charts.items() if box.isChecked()],
        )
        return values


def _combo(labels: dict, current) -> QComboBox:
    combo = QComboBox()
    for value, label in labels.items():
        combo.addItem(label, value)
    combo.setCurrentIndex(max(0, combo.findData(current)))
    return combo
