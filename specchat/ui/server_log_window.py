"""Server ▸ Server log…: every API request the server finished, newest first and live, with a filter,
failures in the error colour, Copy row and Open log file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QItemSelection, QModelIndex, QPersistentModelIndex, QPoint, QSize, Qt, QUrl
from PySide6.QtGui import QAction, QColor, QDesktopServices, QKeySequence, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from specchat.server.request_log import RequestRecord

from . import theme
from .screen_fit import fit_to_screen
from .server_log_model import RecordFilter, RequestLogModel, record_line
from .theme_switch import follow

TITLE = "Server log — SpecChat"
DEFAULT_SIZE = (1200, 560)  # the columns whole at a laptop's 1280 x 800, with room for the error text
MIN_SIZE = (640, 320)


class KeptColour(QStyledItemDelegate):
    """Draws a selected row's text in its own colour: a failure stays red when selected."""

    def initStyleOption(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:  # noqa: N802 (Qt's name)
        """The item's options, its foreground also the selected text's colour."""
        super().initStyleOption(option, index)
        colour = index.data(Qt.ItemDataRole.ForegroundRole)
        if isinstance(colour, QColor):
            option.palette.setColor(QPalette.ColorRole.HighlightedText, colour)


class ServerLogWindow(QWidget):
    """A view of the server's request records (`model`, fed as requests finish) and their log file."""

    def __init__(
        self,
        model: RequestLogModel,
        log_file: Path | None,
        parent: QWidget | None = None,
        open_url: Callable[[QUrl], bool] = QDesktopServices.openUrl,
    ):
        super().__init__(parent, Qt.WindowType.Window)
        self.model, self.log_file, self.open_url = model, log_file, open_url
        self.setWindowTitle(TITLE)
        self.setObjectName("serverLog")
        self.setMinimumSize(*MIN_SIZE)
        self.rows = RecordFilter(self)
        self.rows.setSourceModel(model)
        for changed in (model.rowsInserted, model.rowsRemoved, model.modelReset):
            changed.connect(self._rows_changed)
        self._build()
        self._add_actions()
        follow(self, self._restyle)
        self._update_count()
        self._update_buttons()
        fit_to_screen(self, QSize(*DEFAULT_SIZE))

    # --- construction ---

    def _build(self) -> None:
        title = QLabel("Server log", objectName="windowTitle")  # type: ignore[call-overload]
        self.where = QLabel(self._where_text(), objectName="hint")  # type: ignore[call-overload]
        self.where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.filter_box = QLineEdit(
            placeholderText="Filter by route, client, status, drafter or error…", clearButtonEnabled=True
        )
        self.filter_box.textChanged.connect(self._filter)
        self.count = QLabel(objectName="hint")  # type: ignore[call-overload]
        self.table = self._make_table()
        self.copy_button = QPushButton("Copy row")
        self.copy_button.setToolTip("Copy the selected requests as JSON lines, as the log file holds them")
        self.copy_button.clicked.connect(self.copy_selected)
        self.open_button = QPushButton("Open log file")
        self.open_button.clicked.connect(self.open_log_file)
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        top = QHBoxLayout()
        top.addWidget(self.filter_box, 1)
        top.addWidget(self.count)
        buttons = QHBoxLayout()
        buttons.addWidget(self.copy_button)
        buttons.addWidget(self.open_button)
        buttons.addStretch(1)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addWidget(self.where)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)

    def _make_table(self) -> QTableView:
        table = QTableView()
        table.setObjectName("requestTable")
        table.setModel(self.rows)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setAlternatingRowColors(True)
        table.setWordWrap(False)
        table.setShowGrid(False)
        table.setItemDelegate(KeptColour(table))
        table.verticalHeader().hide()
        table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 8)
        header = table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)  # the error text takes what is left
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        table.customContextMenuRequested.connect(self._context_menu)
        table.selectionModel().selectionChanged.connect(self._selection_changed)
        return table

    def _add_actions(self) -> None:
        self.copy_action = QAction("Copy row", self)
        self.copy_action.setShortcut(QKeySequence.StandardKey.Copy)
        self.copy_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.copy_action.triggered.connect(self.copy_selected)
        self.table.addAction(self.copy_action)
        close = QAction("Close window", self)
        close.setShortcuts([QKeySequence(Qt.Key.Key_Escape), QKeySequence("Ctrl+W")])
        close.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        close.triggered.connect(self.close)
        self.addAction(close)

    # --- records ---

    def selected_records(self) -> list[RequestRecord]:
        """The records of the selected rows, top to bottom."""
        rows = sorted({index.row() for index in self.table.selectionModel().selectedRows()})
        return [self.rows.record(row) for row in rows]

    # --- actions ---

    def copy_selected(self) -> None:
        """Put the selected records on the clipboard, one JSON line each."""
        records = self.selected_records()
        if records:
            QApplication.clipboard().setText("\n".join(record_line(r) for r in records))

    def open_log_file(self) -> None:
        """Open the log file in the system's viewer (the button says why not when there is none yet)."""
        path = self.log_file
        if path is not None and path.exists():
            self.open_url(QUrl.fromLocalFile(str(path)))

    # --- state ---

    def _filter(self, text: str) -> None:
        self.rows.setFilterFixedString(text.strip())
        self._update_count()

    def _rows_changed(self, *_args: object) -> None:
        self._update_count()
        self._update_buttons()  # the log file appears with the first record

    def _selection_changed(self, _selected: QItemSelection, _deselected: QItemSelection) -> None:
        self._update_buttons()

    def _context_menu(self, where: QPoint) -> None:
        if not self.table.indexAt(where).isValid():
            return
        menu = QMenu(self)
        menu.addAction(self.copy_action)
        menu.addAction("Open log file", self.open_log_file).setEnabled(self.open_button.isEnabled())
        menu.exec(self.table.viewport().mapToGlobal(where))

    def _update_count(self) -> None:
        shown, total = self.rows.rowCount(), self.model.rowCount()
        noun = "request" if total == 1 else "requests"
        self.count.setText(f"{total} {noun}" if shown == total else f"{shown} of {total} {noun}")

    def _update_buttons(self) -> None:
        selected = self.table.selectionModel().hasSelection()
        self.copy_button.setEnabled(selected)
        self.copy_action.setEnabled(selected)
        path = self.log_file
        self.open_button.setEnabled(path is not None and path.exists())
        if path is None:
            self.open_button.setToolTip("This server keeps its requests in memory only: there is no log file")
        elif not path.exists():
            self.open_button.setToolTip(f"No request has been written to {path} yet")
        else:
            self.open_button.setToolTip(f"Open {path}")

    def _where_text(self) -> str:
        path = self.log_file
        kept = "Each API request once it has ended, newest first"
        return f"{kept}; also written to {path}" if path is not None else f"{kept}; kept in memory only"

    def _restyle(self) -> None:
        p = theme.palette()
        self.setStyleSheet(
            theme.style_sheet(p)
            + f"""
#serverLog {{ background: {p.window_bg}; }}
#windowTitle {{ color: {p.text}; font-size: 16px; font-weight: 600; }}
#hint {{ color: {p.muted}; }}
#requestTable {{ background: {p.surface}; alternate-background-color: {p.panel_bg}; color: {p.text};
    border: 1px solid {p.border}; border-radius: 6px; selection-background-color: {p.selection_bg}; }}
#requestTable:focus {{ border: 2px solid {p.accent}; }}
QHeaderView::section {{ background: {p.panel_bg}; color: {p.muted}; border: none;
    border-bottom: 1px solid {p.border}; padding: 4px 8px; }}
"""
        )
        palette = self.table.palette()
        palette.setColor(QPalette.ColorRole.HighlightedText, QColor(p.text))  # on the light selection colour
        self.table.setPalette(palette)
        self.model.restyle()
