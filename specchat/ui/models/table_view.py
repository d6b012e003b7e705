"""The models table view: sortable columns, painted name / status / progress cells, selection by row key."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from .delegates import NameDelegate, ProgressDelegate, StatusDelegate
from .rows import ModelRow
from .table_model import HEADERS, NAME, PROGRESS, SORT_ROLE, STATUS, ModelTableModel

COLUMN_WIDTHS = (100, 104, 72, 106, 84, 114, 182)  # every column after the name, which stretches
ROW_HEIGHT = 44


class ModelsTable(QTableView):
    """A QTableView over a ModelTableModel through a sort proxy; rows are addressed by their key."""

    def __init__(self, source: ModelTableModel, parent=None):
        super().__init__(parent)
        self.setObjectName("modelsTable")
        self.source = source
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(source)
        self.proxy.setSortRole(SORT_ROLE)
        self.setModel(self.proxy)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.setShowGrid(False)
        self.setAlternatingRowColors(True)
        self.setWordWrap(False)
        self.verticalHeader().hide()
        self.verticalHeader().setDefaultSectionSize(ROW_HEIGHT)
        self.setItemDelegateForColumn(NAME, NameDelegate(self))
        self.setItemDelegateForColumn(PROGRESS, ProgressDelegate(self))
        self.setItemDelegateForColumn(STATUS, StatusDelegate(self))
        header = self.horizontalHeader()
        header.setHighlightSections(False)
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(NAME, QHeaderView.ResizeMode.Stretch)
        for column, width in zip(range(1, len(HEADERS)), COLUMN_WIDTHS):
            self.setColumnWidth(column, width)
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # the model's order until a header is clicked
        self.setSortingEnabled(True)

    def row_at(self, index: QModelIndex) -> ModelRow:
        """The row under a view index."""
        return self.source.row_at(self.proxy.mapToSource(index).row())

    def selected(self) -> list[ModelRow]:
        """The selected rows, in model order."""
        positions = sorted(self.proxy.mapToSource(i).row() for i in self.selectionModel().selectedRows())
        return [self.source.row_at(p) for p in positions]

    def select_keys(self, keys) -> None:
        """Select exactly the rows with these keys and scroll to them."""
        selection = self.selectionModel()
        selection.clearSelection()
        for key in keys:
            position = self.source.position(key)
            if position is not None:
                index = self.proxy.mapFromSource(self.source.index(position, NAME))
                selection.select(index, selection.SelectionFlag.Select | selection.SelectionFlag.Rows)
                self.scrollTo(index)
