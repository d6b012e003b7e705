"""The model manager window: search, the models table with downloads, actions, and the pair builder."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from specchat.hub.catalog import Catalog, load_catalog
from specchat.hub.config import HubConfig
from specchat.hub.download import FreeSpace
from specchat.hub.search import SearchResult, catalog_hits
from specchat.hub.store import LocalModel
from specchat.hub.tokenizer_info import VocabHashCache
from specchat.paths import AppPaths
from specchat.settings import Settings
from specchat.system.memory import MachineMemory, read_machine_memory

from ..banner import Banner
from ..plain_words import this_machine
from ..screen_fit import fit_to_screen
from ..theme_switch import follow
from .dflash_bar import DFlashBar
from .downloads import DownloadRows
from .listing import ModelListing
from .mtp_head_bar import MtpHeadBar
from .pair_panel import PairPanel
from .planned_fit import DownloadGate
from .row_actions import RowActions
from .style import state_pill, style_sheet
from .table_model import ModelTableModel
from .table_view import ModelsTable
from .workers import Downloader, hub_task_runner

DEFAULT_SIZE = (1360, 800)
SPLITTER_GAP = 12  # px between the left column and the pair builder


class ModelsWindow(ModelListing, RowActions, QWidget):
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
