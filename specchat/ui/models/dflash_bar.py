"""The Models window's DFlash line: "DFlash drafter: z-lab/Qwen3-8B-DFlash-b16 (≈ 2.1 GB) · Not downloaded [Download]".

For a selected catalog target with a DFlash drafter (or a selected drafter), the pairing is named with what is
on disk, and one click downloads what is missing of the pair as one job, through the window's download gate
(which asks first when the planned memory fit, the drafter included, is red).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton

from specchat.hub.catalog import Catalog

from .rows import STATUS_TEXT, ModelRow, row_key, size_text, status_text
from .table_model import ModelTableModel


class DFlashBar(QFrame):
    """The DFlash pairing of the selected model, with a button that downloads the missing half (or both)."""

    downloadRequested = Signal(object)  # list[ModelRow]: what the button downloads, as one job

    def __init__(self, catalog: Catalog, table: ModelTableModel, download: Callable[[list[ModelRow]], object]):
        super().__init__(objectName="dflashBar")  # type: ignore[call-arg]
        self.catalog, self.table, self.download = catalog, table, download
        self.pair: tuple[ModelRow, ModelRow] | None = None  # (target, drafter) of the selection
        self.label = QLabel(objectName="hint", wordWrap=True)  # type: ignore[call-overload]
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.button = QPushButton("Download drafter", enabled=False)  # type: ignore[call-overload]
        self.button.clicked.connect(self.download_missing)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label, 1)
        row.addWidget(self.button)
        self.hide()

    def set_row(self, row: ModelRow | None) -> None:
        """Show the pairing of this row (a target with a DFlash drafter, or a drafter), or hide the line."""
        self.pair = self._pair_of(row) if row is not None else None
        self.refresh()

    def _pair_of(self, row: ModelRow) -> tuple[ModelRow, ModelRow] | None:
        if row.dflash_repo:
            return row, self._row(row.dflash_repo)
        if row.dflash_target:
            return self._row(row.dflash_target), row
        return None

    def _row(self, repo_id: str) -> ModelRow:
        """The table's row of a repo (the current one, with its transfer), else one made from the catalog."""
        found = self.table.find(row_key(repo_id))
        return found if found is not None else ModelRow(row_key(repo_id), repo_id, self.catalog.get(repo_id))

    def refresh(self) -> None:
        """Say again what is on disk and downloading (the rows change as downloads run)."""
        if self.pair is None:
            self.hide()
            return
        target, drafter = (self._row(r.repo_id) if r.repo_id else r for r in self.pair)
        self.pair = (target, drafter)
        missing = self.missing()
        self.label.setText(
            f"DFlash drafter: {drafter.name} ({size_text(drafter)}) · {status_text(drafter)} · "
            f"drafts for {target.name} ({status_text(target).lower()})"
        )
        self.button.setText("Download target + drafter" if len(missing) == 2 else "Download drafter")
        if len(missing) == 1 and missing[0] is target:
            self.button.setText("Download target")
        self.button.setEnabled(bool(missing))
        self.button.setToolTip(
            "Download what is missing of this target and its DFlash drafter as one job"
            if missing
            else f"{STATUS_TEXT['complete']}, or downloading now"
        )
        self.show()

    def missing(self) -> list[ModelRow]:
        """The rows of the pair that can be downloaded now (target first)."""
        return [r for r in self.pair or () if r.downloadable]

    def download_missing(self) -> None:
        """Download the missing half of the pair (or both) as one job."""
        rows = self.missing()
        if rows:
            self.download(rows)
            self.downloadRequested.emit(rows)
