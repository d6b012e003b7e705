"""The model manager window: search, the models table with downloads, actions, and the pair builder."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QMessageBox,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from specchat.hub.catalog import Catalog, load_catalog
from specchat.hub.config import HubConfig
from specchat.hub.download import FreeSpace
from specchat.hub.search import SearchResult, catalog_hits, search_models
from specchat.hub.store import LocalModel, delete_model, scan_local_models
from specchat.hub.tokenizer_info import VocabHashCache
from specchat.hub.units import format_bytes
from specchat.paths import AppPaths
from specchat.settings import Settings, save_settings
from specchat.system.memory import MachineMemory, read_machine_memory

from ..banner import Banner
from ..plain_words import this_machine
from ..screen_fit import fit_to_screen
from ..theme_switch import follow
from .dflash_bar import DFlashBar
from .downloads import DownloadRows
from .mtp_head_bar import MtpHeadBar
from .pair_panel import PairPanel
from .planned_fit import DownloadGate
from .rows import ModelRow, build_rows, repo_ids
from .style import state_pill, style_sheet
from .table_model import ModelTableModel
from .table_view import ModelsTable
from .workers import Downloader, hub_task_runner

DEFAULT_SIZE = (1360, 800)
SPLITTER_GAP = 12  # px between the left column and the pair builder
DFLASH_DRAFT_TIP = "Load this DFlash drafter beside the chat's target (the target it was trained for)"
OFFLINE_TIP = "Hugging Face is not reachable, so nothing can be downloaded now: press Search to try again"


class ModelsWindow(QWidget):
    """Catalog + hub + local models; downloads run on their own thread, hub calls on a pool."""

    use_as_target = Signal(str)  # a complete model folder
    use_as_draft = Signal(str)
    use_as_dflash = Signal(str)  # a complete DFlash drafter folder, to load beside the chat's target
    searchFinished = Signal(object)  # SearchResult, after the table shows it
    localScanned = Signal(object)  # list[LocalModel], after the table shows it
    mtpHeadAdded = Signal(str)  # a model folder that now has an MTP head

    def __init__(
        self,
        paths: AppPaths,
        settings: Settings,
        parent=None,
        config: HubConfig | None = None,
        catalog: Catalog | None = None,
        read_memory: Callable[[], MachineMemory] = read_machine_memory,
        free: FreeSpace | None = None,
        autostart: bool = True,
    ):
        super().__init__(parent, Qt.WindowType.Window)
        self.paths, self.settings = paths, settings
        self.config = config or HubConfig.from_env()
        self.catalog = catalog or load_catalog()
        self.vocab = VocabHashCache(paths.cache_dir / "vocab_hashes.json")
        self.runner = hub_task_runner(self)
        self.downloader = Downloader(self.config, free, self)
        self._free = free
        self.search_result = SearchResult(tuple(catalog_hits(self.catalog, "")), False, "")
        self.hub_state = "searching"
        self.hub_reachable = True  # until a search says otherwise; "searching" again keeps the last answer
        self.local: list[LocalModel] = []
        self._query = ""
        self._search_seq = self._scan_seq = 0
        self.closed = False  # after shutdown(): downloads stopped, open a new window
        self.setWindowTitle("Models — SpecChat")
        self.setObjectName("modelsWindow")
        follow(self, lambda: self.setStyleSheet(style_sheet()))
        self._build(read_memory)
        self._add_close_keys()
        fit_to_screen(self, QSize(*DEFAULT_SIZE))
        self._fitted = False  # again once shown, when the frame's size is known
        self._connect()
        app = QApplication.instance()
        if app is not None:  # a window left open when the app quits must still stop its threads
            app.aboutToQuit.connect(self.shutdown)
        self._rebuild()
        if autostart:
            self.refresh_local()
            self.search()

    # --- construction ---

    def _build(self, read_memory) -> None:
        title = QLabel("Models", objectName="windowTitle")  # type: ignore[call-overload]
        subtitle = QLabel(  # type: ignore[call-overload]
            f"Curated Qwen models for MLX, Hugging Face search, and what is on {this_machine()}.", objectName="hint"
        )
        self.search_box = QLineEdit(  # type: ignore[call-overload]
            placeholderText="Search MLX models on Hugging Face…", objectName="searchBox", clearButtonEnabled=True
        )
        self.search_button = QPushButton("Search")
        self.state_label = QLabel(objectName="hubState")  # type: ignore[call-overload]
        self.state_label.setTextFormat(Qt.TextFormat.RichText)
        self.state_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        follow(self.state_label, lambda: self.state_label.setText(state_pill(self.hub_state)))  # its colours too
        self.banner = Banner()
        self.table_model = ModelTableModel(self)
        self.table = ModelsTable(self.table_model)
        self.downloads = DownloadRows(self.downloader, self.table_model, self)
        self.pair_panel = PairPanel(self.runner, self.catalog, read_memory, config=self.config)
        self.download_gate = DownloadGate(self, self.downloads.start, self.pair_panel, self.runner, self.table_model)
        self._make_actions()
        header = QHBoxLayout()
        heading = QVBoxLayout()
        heading.setSpacing(2)
        heading.addWidget(title)
        heading.addWidget(subtitle)
        header.addLayout(heading, 1)
        header.addWidget(self.search_box, 1)
        header.addWidget(self.search_button)
        buttons = QHBoxLayout()
        buttons.setSpacing(6)
        for button in self.buttons.values():
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.state_label)
        left = QWidget()
        column = QVBoxLayout(left)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(8)
        column.addLayout(buttons)
        column.addWidget(self.table, 1)
        self.mtp_bar = MtpHeadBar(self.runner, self.config, self.catalog, self._free)
        column.addWidget(self.mtp_bar)
        self.dflash_bar = DFlashBar(self.catalog, self.table_model, self.download_gate.request)
        column.addWidget(self.dflash_bar)
        self.footer = QLabel(objectName="hint")  # type: ignore[call-overload]
        column.addWidget(self.footer)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setHandleWidth(SPLITTER_GAP)  # room between the table (and the hub pill above it) and the panel
        self.splitter.addWidget(left)
        self.splitter.addWidget(self.pair_panel)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setSizes([1000, 340])  # the panel at its narrowest on a laptop screen: the table needs the room
        root = QVBoxLayout(self)
        root.setContentsMargins(18, 14, 18, 14)
        root.setSpacing(10)
        root.addLayout(header)
        root.addWidget(self.banner)
        root.addWidget(self.splitter, 1)

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        if not self._fitted:
            self._fitted = True
            fit_to_screen(self)

    def _add_close_keys(self) -> None:
        """Esc and the platform's close-window key (Cmd+W on a Mac, Ctrl+W elsewhere) close this window."""
        close = QAction("Close window", self)
        keys = [QKeySequence(Qt.Key.Key_Escape), QKeySequence("Ctrl+W")]
        keys += [k for k in QKeySequence.keyBindings(QKeySequence.StandardKey.Close) if k not in keys]
        close.setShortcuts(keys)
        close.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        close.triggered.connect(self.close)
        self.addAction(close)
        self.close_action = close

    def _make_actions(self) -> None:
        specs = (
            (
                "download",
                "Download",
                "Download the selected models into the Hugging Face cache "
                "(select a target and its draft to fetch both as one job)",
                self.download_selected,
            ),
            ("cancel", "Cancel", "Stop the download; partial files are kept to resume later", self.cancel_selected),
            ("delete", "Delete…", "Delete the selected download from the Hugging Face cache", self.delete_selected),
            ("target", "Use as target", "Load this model as the chat's target", self._emit_target),
            ("draft", "Use as draft", "Load this model as the chat's draft", self._emit_draft),
            ("folder", "Add folder…", "Also list the models in a folder of yours", self.add_folder),
        )
        self.actions_by_name: dict[str, QAction] = {}
        self.buttons: dict[str, QPushButton] = {}
        self.tips = {name: tip for name, _text, tip, _slot in specs}
        for name, text, tip, slot in specs:
            action = QAction(text, self, toolTip=tip)
            action.triggered.connect(slot)
            button = QPushButton(text, objectName="primary" if name == "download" else "")  # type: ignore[call-overload]
            button.setToolTip(tip)
            button.clicked.connect(action.trigger)
            action.enabledChanged.connect(button.setEnabled)
            self.actions_by_name[name], self.buttons[name] = action, button
        delete = self.actions_by_name["delete"]
        delete.setShortcut(QKeySequence.StandardKey.Delete)
        delete.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        self.table.addAction(delete)  # Delete in the search box edits text; in the table it deletes
        self.actions_by_name["folder"].setEnabled(True)

    def _connect(self) -> None:
        self.search_box.returnPressed.connect(self.search)
        self.search_button.clicked.connect(self.search)
        self.table.selectionModel().selectionChanged.connect(self._update_actions)
        self.table.selectionModel().selectionChanged.connect(self._show_selected_fit)
        self.table.customContextMenuRequested.connect(self._context_menu)
        self.table.doubleClicked.connect(self._double_clicked)
        self.table_model.dataChanged.connect(self._update_actions)
        self.table_model.modelReset.connect(self._update_actions)
        self.downloads.ended.connect(lambda *_: self.refresh_local())
        self.downloads.failed.connect(self.banner.show_message)
        self.pair_panel.pairChosen.connect(self._use_pair)
        self.table.selectionModel().selectionChanged.connect(self._show_mtp_head)
        self.table.selectionModel().selectionChanged.connect(self._show_dflash)
        self.table_model.dataChanged.connect(lambda *_: self.dflash_bar.refresh())
        self.table_model.modelReset.connect(self.dflash_bar.refresh)
        self.mtp_bar.finished.connect(self._mtp_head_added)
        self.mtp_bar.failed.connect(lambda message: self.banner.show_message(f"Could not add the MTP head: {message}"))

    # --- hub search and local scan ---

    def search(self) -> None:
        """Search the catalog and the hub for the box's text, off the UI thread."""
        self._query = self.search_box.text().strip()
        self._search_seq += 1
        seq, query, catalog, config = self._search_seq, self._query, self.catalog, self.config
        self._set_hub_state("searching", "")
        self._rebuild()  # local models filter at once; hub hits follow
        self.runner.run(lambda: (seq, search_models(query, catalog, config)), self._search_done, self._search_failed)

    def _search_done(self, answer) -> None:
        seq, result = answer
        if seq != self._search_seq:
            return  # an older search answered late
        self.search_result = result
        self._set_hub_state(result.state, result.message)
        self._rebuild()
        self.searchFinished.emit(result)

    def _search_failed(self, message: str) -> None:
        self.search_result = SearchResult(tuple(catalog_hits(self.catalog, self._query)), False, message)
        self._set_hub_state("offline", message)
        self._rebuild()
        self.searchFinished.emit(self.search_result)

    def _set_hub_state(self, state: str, message: str) -> None:
        self.hub_state = state
        if state != "searching":
            self.hub_reachable = state == "online"
            self._update_actions()
        self.state_label.setText(state_pill(state))
        self.state_label.setToolTip(message or f"Hugging Face at {self.config.endpoint}")
        if state == "offline":
            detail = message.removeprefix("offline: ").removesuffix("; showing the catalog only")
            self.banner.show_message(
                "Hugging Face is not reachable, so the list shows the curated catalog and the models on this machine.",
                "warning",
                detail,
            )
        elif self.banner.level == "warning":
            self.banner.dismiss()

    def refresh_local(self) -> None:
        """Rescan the HF cache and the user's folders, off the UI thread."""
        self._scan_seq += 1
        seq, config, folders, vocab = self._scan_seq, self.config, list(self.settings.extra_model_dirs), self.vocab
        self.runner.run(
            lambda: (seq, scan_local_models(config, folders, vocab)),
            self._scan_done,
            lambda message: self.banner.show_message(f"Could not list the local models: {message}"),
        )

    def _scan_done(self, answer) -> None:
        seq, models = answer
        if seq != self._scan_seq:
            return
        self.local = models
        self.downloads.clear_done()
        self._rebuild()
        self.localScanned.emit(models)

    def _rebuild(self) -> None:
        selected = {r.key for r in self.selected_rows()}
        self.table_model.set_rows(build_rows(self.catalog, self.search_result.hits, self.local, self._query))
        self.table.select_keys(selected)
        self.pair_panel.set_models(self.table_model.rows())
        on_disk = sum(r.local is not None for r in self.table_model.rows())
        self.footer.setText(
            f"{len(self.table_model.rows())} models · {on_disk} on this machine · "
            f"downloads go to {self.config.cache_dir}"
        )

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

    # --- closing ---

    def shutdown(self) -> None:
        """Cancel downloads (partial files stay) and wait for background work; safe to call twice."""
        if self.closed:
            return
        self.closed = True
        self.downloader.shutdown()
        self.mtp_bar.shutdown()
        self.runner.shutdown()

    def closeEvent(self, event: QCloseEvent) -> None:
        busy = [r for r in self.table_model.rows() if r.busy]
        if busy and self.isVisible() and not self.closed:
            names = ", ".join(r.name for r in busy)
            answer = QMessageBox.question(
                self,
                "Stop downloads?",
                f"Closing stops the download of {names}. The files fetched so "
                "far are kept, and downloading again resumes from there.",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                QMessageBox.StandardButton.Yes,
            )
            if answer != QMessageBox.StandardButton.Yes:
                event.ignore()
                return
        self.shutdown()
        super().closeEvent(event)


def _folder(row: ModelRow) -> str:
    """A usable row's model folder (usable means complete on disk)."""
    assert row.local is not None
    return str(row.local.path)


def open_models_window(parent, paths: AppPaths, settings: Settings) -> ModelsWindow:
    """Show the parent's model manager window (made on first use, again after it was closed) and return it."""
    children = parent.findChildren(ModelsWindow) if parent is not None else []
    window = next((w for w in children if not w.closed), None)
    if window is None:
        window = ModelsWindow(paths, settings, parent)
    window.show()
    window.raise_()
    window.activateWindow()
    return window
