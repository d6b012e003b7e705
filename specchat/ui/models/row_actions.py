"""The models window's actions on the selected rows: which are enabled, use or pair a model, download,
cancel, delete, add a folder, and the DFlash and MTP head bars of the selection. A mixin of ModelsWindow."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox

from specchat.hub.store import LocalModel, delete_model
from specchat.hub.units import format_bytes
from specchat.settings import save_settings

from ..mixin_bases import WidgetPart
from .rows import ModelRow, repo_ids

if TYPE_CHECKING:
    from PySide6.QtCore import Signal
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QPushButton

    from specchat.hub.config import HubConfig
    from specchat.paths import AppPaths
    from specchat.settings import Settings

    from ..banner import Banner
    from ..tasks import TaskRunner
    from .dflash_bar import DFlashBar
    from .downloads import DownloadRows
    from .mtp_head_bar import MtpHeadBar
    from .pair_panel import PairPanel
    from .planned_fit import DownloadGate
    from .table_view import ModelsTable


DFLASH_DRAFT_TIP = "Load this DFlash drafter beside the chat's target (the target it was trained for)"
OFFLINE_TIP = "Hugging Face is not reachable, so nothing can be downloaded now: press Search to try again"


class RowActions(WidgetPart):
    """What the buttons, the context menu and a double click do to the selection; ModelsWindow supplies the
    widgets."""

    # what ModelsWindow supplies (declared for the type checker; nothing is set here)
    paths: AppPaths
    settings: Settings
    config: HubConfig
    runner: TaskRunner
    hub_reachable: bool
    banner: Banner
    table: ModelsTable
    downloads: DownloadRows
    pair_panel: PairPanel
    download_gate: DownloadGate
    mtp_bar: MtpHeadBar
    dflash_bar: DFlashBar
    actions_by_name: dict[str, QAction]
    buttons: dict[str, QPushButton]
    tips: dict[str, str]
    use_as_target: Signal
    use_as_draft: Signal
    use_as_dflash: Signal
    mtpHeadAdded: Signal
    refresh_local: Callable[[], None]  # ModelListing's

    # --- selection and actions ---

    def selected_rows(self) -> list[ModelRow]:
        """The rows selected in the table, top to bottom."""
        return self.table.selected()

    def select(self, *keys: str) -> None:
        """Select the rows with these keys (repo ids in lower case, or folder paths)."""
        self.table.select_keys(keys)

    def _update_actions(self, *_) -> None:
        rows = self.selected_rows()
        single = rows[0] if len(rows) == 1 else None
        enabled = {
            "download": self.hub_reachable and bool(rows) and all(r.downloadable for r in rows),
            "cancel": any(r.busy for r in rows),
            "delete": single is not None and single.deletable,
            "target": single is not None and single.usable and not single.is_dflash,
            "draft": single is not None and single.usable,
        }
        for name, on in enabled.items():
            self.actions_by_name[name].setEnabled(on)  # its button follows (enabledChanged)
        self._set_tip("download", self.tips["download"] if self.hub_reachable else OFFLINE_TIP)
        dflash = single is not None and single.is_dflash
        self._set_tip("draft", DFLASH_DRAFT_TIP if dflash else self.tips["draft"])

    def _set_tip(self, name: str, tip: str) -> None:
        self.actions_by_name[name].setToolTip(tip)
        self.buttons[name].setToolTip(tip)

    def _show_selected_fit(self, *_) -> None:
        """A target (and a draft) not downloaded yet: their planned memory fit in the pair builder.

        The draft may be on disk already: the planned fit is then the hub target's with that draft.
        """
        rows = self.selected_rows()
        hub, local = [r for r in rows if r.downloadable], [r for r in rows if r.usable]
        if hub and len(rows) <= 2 and len(hub) + len(local) == len(rows):
            self.pair_panel.check_planned(repo_ids(hub), _folder(local[0]) if local else None)
        else:
            self.pair_panel.check_local()

    def _context_menu(self, pos) -> None:
        menu = QMenu(self)
        for name in ("download", "cancel", "delete", "target", "draft"):
            menu.addAction(self.actions_by_name[name])
        menu.addSeparator()
        single = self.selected_rows()[:1]
        for text, slot in (("Pair as target", self._pair_target), ("Pair as draft", self._pair_draft)):
            action = menu.addAction(text, slot)
            action.setEnabled(bool(single) and single[0].usable and not single[0].is_dflash)
        menu.exec(self.table.viewport().mapToGlobal(pos))

    def _double_clicked(self, index) -> None:
        row = self.table.row_at(index)
        if row.usable and not row.is_dflash:
            self.pair_panel.choose(target=_folder(row))

    def _single_usable(self) -> ModelRow | None:
        rows = self.selected_rows()
        return rows[0] if len(rows) == 1 and rows[0].usable else None

    def _emit_target(self) -> None:
        row = self._single_usable()
        if row is not None and not row.is_dflash:
            self.use_as_target.emit(_folder(row))

    def _emit_draft(self) -> None:
        row = self._single_usable()
        if row is not None:
            (self.use_as_dflash if row.is_dflash else self.use_as_draft).emit(_folder(row))

    def _pair_target(self) -> None:
        row = self._single_usable()
        if row is not None:
            self.pair_panel.choose(target=_folder(row))

    def _pair_draft(self) -> None:
        row = self._single_usable()
        if row is not None:
            self.pair_panel.choose(draft=_folder(row))

    def _use_pair(self, target: str, draft: str | None) -> None:
        self.use_as_target.emit(target)
        if draft:
            self.use_as_draft.emit(draft)

    def add_folder(self) -> None:
        """Ask for a folder of models and list it from now on (saved in the settings)."""
        folder = QFileDialog.getExistingDirectory(self, "Add a folder of MLX models")
        if folder and folder not in self.settings.extra_model_dirs:
            self.settings.extra_model_dirs.append(folder)
            save_settings(self.paths, self.settings)
            self.refresh_local()

    # --- downloads ---

    def download_selected(self) -> None:
        """Download the selected hub models as one job (a target and its draft together), asking first
        when their planned memory fit is red."""
        self.download_gate.request(self.selected_rows())

    def cancel_selected(self) -> None:
        """Stop the downloads of the selected rows (partial files stay for a resume)."""
        self.download_gate.cancel(self.selected_rows())
        self.downloads.cancel(self.selected_rows())

    # --- DFlash ---

    def _show_dflash(self, *_) -> None:
        rows = self.selected_rows()
        self.dflash_bar.set_row(rows[0] if len(rows) == 1 else None)

    # --- MTP head ---

    def _show_mtp_head(self, *_) -> None:
        rows = self.selected_rows()
        self.mtp_bar.set_model(rows[0].local if len(rows) == 1 else None)

    def _mtp_head_added(self, added) -> None:
        self.banner.show_message(f"MTP head added: {added.reason}. Load the model again to speculate with it.", "info")
        self.refresh_local()
        self.mtpHeadAdded.emit(str(added.folder))

    # --- delete ---

    def delete_selected(self) -> None:
        """Delete the selected HF-cache model after the user confirms."""
        rows = self.selected_rows()
        if len(rows) != 1 or not rows[0].deletable:
            return
        model = rows[0].local
        assert model is not None  # a deletable row is on disk
        answer = QMessageBox.question(
            self,
            "Delete model?",
            f"Delete {model.name} ({format_bytes(model.size_bytes)}) from the Hugging Face cache?\n\n"
            f"Other apps that share this cache ({self.config.cache_dir}) lose it too.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        if answer != QMessageBox.StandardButton.Yes:
            return
        config = self.config
        self.runner.run(
            lambda: delete_model(model, config, confirm=True),
            lambda freed: self._deleted(model, freed),
            lambda message: self.banner.show_message(f"Could not delete {model.name}: {message}"),
        )

    def _deleted(self, model: LocalModel, freed: int) -> None:
        self.banner.show_message(f"Deleted {model.name}; {format_bytes(freed)} freed.", "info")
        self.refresh_local()


def _folder(row: ModelRow) -> str:
    """A usable row's model folder (usable means complete on disk)."""
    assert row.local is not None
    return str(row.local.path)
