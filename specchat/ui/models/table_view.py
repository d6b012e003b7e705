"""The models table view: sortable columns, painted name / status / progress cells, selection by row key."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from .delegates import NameDelegate, ProgressDelegate, StatusDelegate
from .rows import ModelRow, progress_text
from .table_model import (
    ARCHITECTURE,
    HEADERS,
    MTP,
    NAME,
    PROGRESS,
    QUANTIZATION,
    ROLE,
    SIZE,
    SORT_ROLE,
    STATUS,
    ModelTableModel,
)

# The name stretches over the width the others leave; these fit their widest cell or their header's word
CONTENT_SIZED = (ROLE, ARCHITECTURE, MTP, QUANTIZATION, SIZE, STATUS)
PROGRESS_WIDE = 182  # while some row has progress to show (a download, its outcome, a partial download)
HEADER_PADDING = 8  # each side of a header's word (the style sheet's QHeaderView::section padding)
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
        self._progress_wide: bool | None = None
        self.fit_columns()
        for signal in (source.modelReset, source.dataChanged, source.rowsInserted, source.rowsRemoved):
            signal.connect(self.fit_columns)
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # the model's order until a header is clicked
        self.setSortingEnabled(True)

    def header_word_width(self, column: int) -> int:
        """Room for a header's word and its padding (Qt's own hint also keeps room for a sort arrow)."""
        font = QFont(self.horizontalHeader().font())
        font.setWeight(QFont.Weight.DemiBold)  # as the style sheet draws headers
        return QFontMetrics(font).horizontalAdvance(HEADERS[column]) + 2 * HEADER_PADDING + 2

    def fit_columns(self, *_) -> None:
        """The small columns fit their contents, so the name gets the rest; Progress is narrow while no row
        has progress to show, and wide (for its bar and words) while one has."""
        for column in CONTENT_SIZED:
            width = max(self.sizeHintForColumn(column), self.header_word_width(column))
            if width != self.columnWidth(column):
                self.setColumnWidth(column, width)
        wide = any(progress_text(row) for row in self.source.rows())
        if wide != self._progress_wide:
            self._progress_wide = wide
            self.setColumnWidth(PROGRESS, PROGRESS_WIDE if wide else self.header_word_width(PROGRESS))

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        self._refit()  # the style sheet's fonts and padding apply once shown

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._refit()

    def _refit(self) -> None:
        self._progress_wide = None  # its narrow width follows the font too
        self.fit_columns()

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
