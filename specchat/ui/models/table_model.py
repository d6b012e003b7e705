"""The table of catalog, hub and local models: a QAbstractTableModel over ModelRow values."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor, QFont

from .. import theme
from .rows import (
    COMPLETE,
    PARTIAL,
    ModelRow,
    Transfer,
    architecture_text,
    mtp_text,
    progress_text,
    quantization_text,
    role_text,
    size_text,
    status_text,
    tooltip_text,
)

NAME, ROLE, ARCHITECTURE, MTP, QUANTIZATION, SIZE, STATUS, PROGRESS = range(8)
HEADERS = ("Model", "Role", "Architecture", "MTP", "Quantization", "Size", "Status", "Progress")
ROW_ROLE = Qt.ItemDataRole.UserRole + 1  # the ModelRow
FRACTION_ROLE = Qt.ItemDataRole.UserRole + 2  # float 0..1 for the progress bar, None for no bar
STATE_ROLE = Qt.ItemDataRole.UserRole + 3  # row.status / transfer state, for colours
SORT_ROLE = Qt.ItemDataRole.UserRole + 4
ROOT = QModelIndex()  # the invisible root: a flat table has no parents

_TEXT: dict[int, Callable[[ModelRow], str]] = {
    NAME: lambda r: r.name,
    ROLE: role_text,
    ARCHITECTURE: architecture_text,
    MTP: mtp_text,
    QUANTIZATION: quantization_text,
    SIZE: size_text,
    STATUS: status_text,
    PROGRESS: progress_text,
}
_STATUS_ORDER = {COMPLETE: 0, PARTIAL: 1}


def row_state(row: ModelRow) -> str:
    """The word that picks a row's colours: the transfer's state while there is one, else the disk's."""
    return row.transfer.state if row.transfer is not None else row.status


class ModelTableModel(QAbstractTableModel):
    """Rows keyed by repo id or folder; downloads update single rows, rescans replace them all."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._rows: list[ModelRow] = []
        self._transfers: dict[str, Transfer] = {}

    # --- Qt model interface ---

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = ROOT) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = ROOT) -> int:
        return 0 if parent.isValid() else len(HEADERS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return HEADERS[section]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row, column = self._rows[index.row()], index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return _TEXT[column](row)
        if role == Qt.ItemDataRole.ToolTipRole:
            return tooltip_text(row)
        if role == ROW_ROLE:
            return row
        if role == STATE_ROLE:
            return row_state(row)
        if role == FRACTION_ROLE:
            return row.transfer.fraction if row.transfer is not None else None
        if role == SORT_ROLE:
            return _sort_key(row, column)
        if role == Qt.ItemDataRole.FontRole and column == NAME and row.local is not None:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.ForegroundRole and column not in (NAME, STATUS) and row.local is None:
            return QColor(theme.MUTED)  # the current palette's: a theme switch repaints with it
        return None

    # --- updates ---

    def set_rows(self, rows: Iterable[ModelRow]) -> None:
        """Replace every row; downloads in progress keep their state on the new rows."""
        self.beginResetModel()
        self._rows = [replace(r, transfer=self._transfers.get(r.key)) for r in rows]
        self.endResetModel()

    def set_transfer(self, keys: Iterable[str], transfer: Transfer | None) -> None:
        """Show a download's state on the rows of its repos (None clears it)."""
        for key in keys:
            if transfer is None:
                self._transfers.pop(key, None)
            else:
                self._transfers[key] = transfer
            position = self.position(key)
            if position is not None:
                self._rows[position] = replace(self._rows[position], transfer=transfer)
                self.dataChanged.emit(self.index(position, 0), self.index(position, len(HEADERS) - 1))

    # --- lookups ---

    def rows(self) -> list[ModelRow]:
        """Every row, in model order."""
        return list(self._rows)

    def row_at(self, position: int) -> ModelRow:
        """The row at a model position."""
        return self._rows[position]

    def position(self, key: str) -> int | None:
        """Model position of the row with this key."""
        return next((i for i, r in enumerate(self._rows) if r.key == key), None)

    def find(self, key: str) -> ModelRow | None:
        """The row with this key."""
        position = self.position(key)
        return self._rows[position] if position is not None else None


def _sort_key(row: ModelRow, column: int):
    if column == SIZE:
        if row.local is not None:
            return float(row.local.size_bytes)
        return row.catalog.approx_size_gb * 1e9 if row.catalog is not None else -1.0
    if column == STATUS:
        return _STATUS_ORDER.get(row.status, 2)
    return _TEXT[column](row).lower()
