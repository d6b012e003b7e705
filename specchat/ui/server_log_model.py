"""The server log's table: one row per finished API request, newest first, failures in the error colour,
and a filter that keeps the rows whose any column holds the text typed. Its summary (RequestSummary) is the
one source of the API's totals: the status bar's count and the dashboard's API line."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor

from specchat.server.request_log import DEFAULT_CAPACITY, RequestRecord
from specchat.server.request_summary import RequestSummary

from . import theme

Index = QModelIndex | QPersistentModelIndex
NONE = "—"  # a figure the request has none of (no generation ran)
ROOT = QModelIndex()  # the invisible root: a flat table has no parents


@dataclass(frozen=True)
class Column:
    """A column: its header, the cell's text for a record, and whether its figures align right."""

    header: str
    text: Callable[[RequestRecord], str]
    numeric: bool = False


def _figure(value: float | int | None, fmt: str) -> str:
    return NONE if value is None else format(value, fmt)


def _when(record: RequestRecord) -> str:
    return datetime.fromtimestamp(record.time).strftime("%H:%M:%S")


def _duration(record: RequestRecord) -> str:
    seconds = record.duration_s
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _acceptance(record: RequestRecord) -> str:
    return NONE if record.acceptance is None else f"{record.acceptance:.0%}"


def rows_text(record: RequestRecord) -> str:
    """The requests decoded together per round: '3 (max 4)', '2' when always as many, — when it ran alone."""
    most, mean = record.batch_rows_max, record.batch_rows_mean
    if most <= 0:
        return NONE
    shown = f"{mean:.1f}".removesuffix(".0")
    return shown if shown == str(most) else f"{shown} (max {most})"


COLUMNS = (
    Column("Time", _when),
    Column("Client", lambda r: r.client or NONE),
    Column("Route", lambda r: f"{r.method} {r.route}".strip()),
    Column("Status", lambda r: str(r.status), numeric=True),
    Column("Prompt", lambda r: _figure(r.prompt_tokens, "d"), numeric=True),
    Column("Reply", lambda r: _figure(r.completion_tokens, "d"), numeric=True),
    Column("Tok/s", lambda r: _figure(r.decode_tokens_per_s, ".1f"), numeric=True),
    Column("Drafter", lambda r: r.drafter or NONE),
    Column("Accepted", _acceptance, numeric=True),
    Column("Rows", rows_text, numeric=True),
    Column("Time taken", _duration, numeric=True),
    Column("Error", lambda r: r.error),
)
ERROR_COLUMN = len(COLUMNS) - 1
TOOLTIPS = {
    "Prompt": "Prompt tokens the request's generation read",
    "Reply": "Tokens the engine generated for the request",
    "Tok/s": "Decoding speed of the request's generation, tokens per second",
    "Drafter": "The speculation mode the generation ran in (auto names the drafters it used)",
    "Accepted": "Drafted tokens the target accepted",
    "Rows": "Requests decoded together in each round of the request's generation: the mean (and the most); "
    "— when it ran alone",
    "Time taken": "From the request's arrival to the end of its response",
    "Status": "The HTTP status sent (499: the client hung up before the response ended)",
}


def record_line(record: RequestRecord) -> str:
    """A record as the log file writes it: one JSON line."""
    return json.dumps(record.to_json(), ensure_ascii=False)


class RequestLogModel(QAbstractTableModel):
    """The records, newest first; `add` puts a new one on top. `summary` totals every record added, those
    past the capacity included (set_records starts it again from the records given)."""

    summaryChanged = Signal(object)  # the new RequestSummary, after each record and each set_records

    def __init__(self, records: Sequence[RequestRecord] = (), parent=None, capacity: int = DEFAULT_CAPACITY):
        super().__init__(parent)
        self.capacity = capacity  # as many as the server's log keeps: the oldest row goes when a new one comes
        self.rows: list[RequestRecord] = list(records)[:capacity]
        self.summary = RequestSummary.of(reversed(self.rows))

    def rowCount(self, parent: Index = ROOT) -> int:  # noqa: N802 (Qt's name)
        """Rows under the root; none under a row."""
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = ROOT) -> int:  # noqa: N802 (Qt's name)
        """The columns of COLUMNS."""
        return 0 if parent.isValid() else len(COLUMNS)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        """A cell's text, alignment, colour (failures in the error colour) and tooltip."""
        if not index.isValid():
            return None
        record, column = self.rows[index.row()], COLUMNS[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return column.text(record)
        if role == Qt.ItemDataRole.ForegroundRole and record.failed:
            return QColor(theme.REJECT)
        if role == Qt.ItemDataRole.TextAlignmentRole and column.numeric:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and index.column() == ERROR_COLUMN and record.error:
            return record.error
        return None

    def headerData(  # noqa: N802 (Qt's name)
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> object:
        """The column headers and what each figure means."""
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(COLUMNS):
            return None
        header = COLUMNS[section].header
        if role == Qt.ItemDataRole.DisplayRole:
            return header
        if role == Qt.ItemDataRole.ToolTipRole:
            return TOOLTIPS.get(header)
        return None

    def add(self, record: RequestRecord) -> None:
        """A request that just finished: the new top row, then the new summary."""
        self.summary = self.summary.plus(record)  # first: a view told of the row may read the totals
        self.beginInsertRows(ROOT, 0, 0)
        self.rows.insert(0, record)
        self.endInsertRows()
        if len(self.rows) > self.capacity:
            self.beginRemoveRows(ROOT, self.capacity, len(self.rows) - 1)
            del self.rows[self.capacity :]
            self.endRemoveRows()
        self.summaryChanged.emit(self.summary)

    def set_records(self, records: Sequence[RequestRecord]) -> None:
        """Show these records (newest first) in place of the current ones."""
        self.beginResetModel()
        self.rows = list(records)[: self.capacity]
        self.summary = RequestSummary.of(reversed(self.rows))
        self.endResetModel()
        self.summaryChanged.emit(self.summary)

    def restyle(self) -> None:
        """Repaint the colours after a theme switch."""
        if self.rows:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self.rows) - 1, len(COLUMNS) - 1))


class RecordFilter(QSortFilterProxyModel):
    """Keeps the rows whose text in any column holds the filter, ignoring case."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.setFilterKeyColumn(-1)

    def record(self, row: int) -> RequestRecord:
        """The record behind a visible row."""
        source = self.sourceModel()
        assert isinstance(source, RequestLogModel)
        return source.rows[self.mapToSource(self.index(row, 0)).row()]
