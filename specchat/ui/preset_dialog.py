"""Manage presets: rename, delete, and mark the one new chats start from."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from specchat.store.conversations import ConversationStore
from specchat.store.presets import Preset, PresetError, delete_preset, presets, rename_preset, set_default_preset

DEFAULT_MARK = " (default)"


def confirm_delete(parent: QWidget, name: str) -> bool:
    """Ask before a preset is deleted."""
    answer = QMessageBox.question(
        parent, "Delete preset", f"Delete the preset “{name}”? Chats that use it keep their settings."
    )
    return answer == QMessageBox.StandardButton.Yes


class PresetDialog(QDialog):
    """The list of presets with Rename…, Delete… and "Default for new chats"; every change is saved at once."""

    changed = Signal()

    def __init__(
        self,
        store: ConversationStore,
        parent: QWidget | None,
        ask_name: Callable[[QWidget, str, str], str | None],
        warn: Callable[[QWidget, str], None],
    ):
        super().__init__(parent)
        self.store, self.ask_name, self.warn = store, ask_name, warn
        self.confirm: Callable[[QWidget, str], bool] = confirm_delete  # tests put answers here
        self.setWindowTitle("Manage presets")
        self.setMinimumWidth(360)
        layout = QVBoxLayout(self)
        self.list = QListWidget()
        self.list.currentRowChanged.connect(lambda _row: self._show_selected())
        self.empty = QLabel("No presets yet: choose “Save current as preset…” in the Settings panel.", wordWrap=True)
        self.empty.setObjectName("footer")
        self.default = QCheckBox("Default for new chats")
        self.default.setToolTip("New chats start with this preset's system prompt and sampling")
        self.default.toggled.connect(self._default_toggled)
        self.rename_button = QPushButton("Rename…")
        self.rename_button.clicked.connect(self.rename_selected)
        self.delete_button = QPushButton("Delete…")
        self.delete_button.clicked.connect(self.delete_selected)
        row = QHBoxLayout()
        for button in (self.default, self.rename_button, self.delete_button):
            row.addWidget(button)
        row.insertStretch(1)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        layout.addWidget(self.list)
        layout.addWidget(self.empty)
        layout.addLayout(row)
        layout.addWidget(close)
        self.reload()

    def reload(self, select: int | None = None) -> None:
        """List the presets again, keeping (or moving to) the selected one."""
        keep = select if select is not None else self.selected_id()
        self.list.clear()
        for each in presets(self.store):
            item = QListWidgetItem(each.name + (DEFAULT_MARK if each.is_default else ""))
            item.setData(Qt.ItemDataRole.UserRole, each.id)
            self.list.addItem(item)
            if each.id == keep:
                self.list.setCurrentItem(item)
        if self.list.currentRow() < 0 and self.list.count():
            self.list.setCurrentRow(0)
        self.empty.setVisible(self.list.count() == 0)
        self._show_selected()

    def selected_id(self) -> int | None:
        """The id of the selected preset (None when the list is empty)."""
        item = self.list.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else None

    def selected(self) -> Preset | None:
        """The selected preset."""
        chosen = self.selected_id()
        return next((p for p in presets(self.store) if p.id == chosen), None)

    def rename_selected(self) -> None:
        """Ask for a new name for the selected preset."""
        chosen = self.selected()
        if chosen is None:
            return
        name = self.ask_name(self, f"New name for “{chosen.name}”:", chosen.name)
        if name is not None and self._saved(rename_preset, chosen.id, name):
            self.reload(chosen.id)

    def delete_selected(self) -> None:
        """Delete the selected preset, after asking."""
        chosen = self.selected()
        if chosen is not None and self.confirm(self, chosen.name) and self._saved(delete_preset, chosen.id):
            self.reload()

    def _default_toggled(self, on: bool) -> None:
        chosen = self.selected()
        if chosen is not None and on != chosen.is_default:
            if self._saved(set_default_preset, chosen.id if on else None):
                self.reload(chosen.id)

    def _show_selected(self) -> None:
        chosen = self.selected()
        for widget in (self.default, self.rename_button, self.delete_button):
            widget.setEnabled(chosen is not None)
        self.default.blockSignals(True)
        self.default.setChecked(chosen is not None and chosen.is_default)
        self.default.blockSignals(False)

    def _saved(self, write: Callable[..., None], *args: object) -> bool:
        """Run one change; a refused name or a store error is said, and False returned."""
        try:
            write(self.store, *args)
        except PresetError as error:
            self.warn(self, str(error))
            return False
        except sqlite3.Error as error:
            self.warn(self, f"Could not save the change to {self.store.path} ({error})")
            return False
        self.changed.emit()
        return True
