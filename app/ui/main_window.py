"""The main window: sidebar, transcript and composer, settings panel, model toolbar, menus."""

from __future__ import annotations

import base64
from pathlib import Path

from PySide6.QtCore import QByteArray, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLabel, QMainWindow, QSplitter, QVBoxLayout, QWidget

from app.engine import GenerationConfig
from app.paths import AppPaths
from app.settings import Settings, load_settings, save_settings
from app.store import ConversationStore

from . import theme
from .banner import Banner
from .chat.composer import Composer
from .chat.controller import ChatController
from .chat.conversation_list import ConversationList
from .chat.footer import MODE_NAMES
from .chat.transcript import TranscriptView
from .engine_client import EngineClient
from .model_bar import ModelBar
from .model_folders import find_model_folders
from .settings_panel import SettingsPanel
from .speculation_menu import SpeculationMenu, tuned_k
from .worker import LoadedPair

DEFAULT_SIZE = (1280, 820)


class MainWindow(QMainWindow):
    """SpecChat's one window. Loads the saved (or given) target on start."""

    def __init__(self, paths: AppPaths | None = None, target: str | None = None, draft: str | None = None,
                 autoload: bool = True):
        super().__init__()
        self.paths = (paths or AppPaths.default()).ensure()
        loaded = load_settings(self.paths)
        self.settings: Settings = loaded.settings
        if target:
            self.settings.target_path = str(Path(target).expanduser().resolve())
            self.settings.draft_path = str(Path(draft).expanduser().resolve()) if draft else None
        self.pair: LoadedPair | None = None
        self.store = ConversationStore(self.paths.conversations_db)
        self.client = EngineClient(self)
        self.setWindowTitle("SpecChat")
        self.setStyleSheet(theme.STYLE_SHEET)
        self._build()
        self._build_menus()
        self._connect()
        self._restore()
        if loaded.warning:
            self.banner.show_message(loaded.warning, "warning")
        if autoload and self.settings.target_path:
            self.load_models(self.settings.target_path, self.settings.draft_path)

    # --- construction ---

    def _build(self) -> None:
        self.banner = Banner()
        self.transcript = TranscriptView()
        self.composer = Composer()
        self.sidebar = ConversationList(self.store)
        self.panel = SettingsPanel()
        self.panel.load(self.settings)
        self.model_bar = ModelBar()
        self.addToolBar(self.model_bar)
        center = QWidget(objectName="centralArea")
        column = QVBoxLayout(center)
        column.setContentsMargins(16, 10, 16, 14)
        column.setSpacing(8)
        column.addWidget(self.banner)
        column.addWidget(self.transcript, 1)
        column.addWidget(self.composer)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        for widget, stretch in ((self.sidebar, 0), (center, 1), (self.panel, 0)):
            self.splitter.addWidget(widget)
            self.splitter.setStretchFactor(self.splitter.count() - 1, stretch)
        self.splitter.setSizes([250, 760, 270])
        self.splitter.setChildrenCollapsible(False)
        self.setCentralWidget(self.splitter)
        self.mode_label = QLabel()
        self.legend = QLabel(f"<span style='background:{theme.DRAFT_BG}'>&nbsp;tinted&nbsp;</span> accepted draft"
                             f" · <span style='color:{theme.REJECT}'><u>red underline</u></span> rejected draft (hover it)")
        self.legend.setObjectName("footer")
        self.statusBar().addWidget(self.legend)
        self.statusBar().addPermanentWidget(self.mode_label)
        self.chat = ChatController(self.store, self.client, self.transcript, self.composer, self.sidebar,
                                   self.reply_settings, self)
        self.composer.thinking.setChecked(self.settings.enable_thinking)
        self.composer.set_ready(False, "Load a model first")

    def _build_menus(self) -> None:
        bar = self.menuBar()
        chat = bar.addMenu("&Chat")
        self.new_action = chat.addAction("New chat", QKeySequence("Ctrl+N"), self.chat.new_conversation)
        self.stop_action = chat.addAction("Stop reply", QKeySequence("Ctrl+."), self.chat.stop)
        self.regenerate_action = chat.addAction("Regenerate reply", QKeySequence("Ctrl+R"), self.chat.regenerate)
        chat.addSeparator()
        chat.addAction("Rename conversation…", QKeySequence("F2"), self._rename_current)
        chat.addAction("Delete conversation…", self._delete_current)
        chat.addSeparator()
        chat.addAction("Quit", QKeySequence.StandardKey.Quit, self.close)
        self.speculation = SpeculationMenu(self)
        bar.addMenu(self.speculation)
        self.speculation.set_k(self.settings.num_draft_tokens)
        self.speculation.set_mode("baseline")
        view = bar.addMenu("&View")
        self.color_action = QAction("Colour drafted tokens", self, checkable=True)
        self.color_action.setShortcut(QKeySequence("Ctrl+Shift+D"))
        self.color_action.setToolTip("Tint text that came from accepted drafts; hover a red mark to see a rejection")
        self.color_action.setChecked(self.settings.color_draft_tokens)
        self.thinking_action = QAction("Think before answering", self, checkable=True)
        self.thinking_action.setShortcut(QKeySequence("Ctrl+Shift+T"))
        self.thinking_action.setChecked(self.settings.enable_thinking)
        self.panel_action = QAction("Settings panel", self, checkable=True, checked=True)
        self.panel_action.setShortcut(QKeySequence("Ctrl+Shift+S"))
        for action in (self.color_action, self.thinking_action, self.panel_action):
            view.addAction(action)
        self.transcript.set_color_drafts(self.settings.color_draft_tokens)
        self.legend.setVisible(self.settings.color_draft_tokens)

    def _connect(self) -> None:
        worker = self.client.worker
        worker.loadProgress.connect(self.model_bar.set_loading)
        worker.loaded.connect(self._on_loaded)
        worker.loadFailed.connect(self._on_load_failed)
        worker.memoryChanged.connect(self.model_bar.set_memory)
        worker.draftsChecked.connect(self._on_drafts_checked)
        self.chat.replyFailed.connect(lambda message: self.banner.show_message(message, "error"))
        self.chat.busyChanged.connect(self._on_busy)
        self.model_bar.loadRequested.connect(self.load_models)
        self.model_bar.targetChanged.connect(self._offer_drafts)
        self.model_bar.folderBrowsed.connect(self._remember_folder)
        self.speculation.modeChosen.connect(self._mode_chosen)
        self.speculation.draftTokensChosen.connect(self._k_chosen)
        self.color_action.toggled.connect(self._color_toggled)
        self.thinking_action.toggled.connect(self.composer.thinking.setChecked)
        self.composer.thinkingToggled.connect(self._thinking_toggled)
        self.panel_action.toggled.connect(self.panel.setVisible)
        self.panel.samplingChanged.connect(self._sampling_changed)
        self.panel.systemPromptChanged.connect(self.chat.set_system_prompt)
        self.sidebar.selected.connect(lambda _id: self.panel.set_system_prompt(self.chat.system_prompt()))
        self.sidebar.newRequested.connect(lambda: self.panel.set_system_prompt(""))
        self.chat.replyStarted.connect(lambda _id: self.banner.dismiss() if self.banner.level == "error" else None)

    def _restore(self) -> None:
        geometry = self.settings.window_geometry
        if not (geometry and self.restoreGeometry(QByteArray(base64.b64decode(geometry)))):
            self.resize(*DEFAULT_SIZE)
        self.model_bar.set_targets(self._model_folders(), self.settings.target_path)
        if self.settings.target_path:
            self._offer_drafts(self.settings.target_path)
        self.sidebar.refresh()
        recent = self.sidebar.ids()
        if recent:
            self.chat.open(recent[0])
            self.panel.set_system_prompt(self.chat.system_prompt())
        self._update_mode_label()

    # --- models ---

    def load_models(self, target: str, draft: str | None = None) -> None:
        """Load a target and optional draft on the engine thread."""
        self.chat.stop()
        self.pair = None
        self.composer.set_ready(False, "Models are loading")
        self.speculation.set_available(None)
        self.model_bar.set_loading(f"Loading {Path(target).name}…")
        self.transcript.empty.set_model_state(False)
        self.settings.target_path, self.settings.draft_path = target, draft
        self.save()
        self.client.load_pair(target, draft)

    def _on_loaded(self, pair: LoadedPair) -> None:
        previous_draft = self.pair.draft if self.pair else None
        self.pair = pair
        self.chat.decode = pair.decode
        names = Path(pair.target).name + (f" + {Path(pair.draft).name}" if pair.draft else "")
        self.model_bar.set_loaded(f"Ready · {names}")
        self.model_bar.set_memory(pair.memory_bytes)
        self.composer.set_ready(True)
        self.transcript.empty.set_model_state(True, names)
        self.speculation.set_available(pair.available_modes)
        self.speculation.set_tuned_k(tuned_k(self.paths, pair.target, pair.draft))
        if pair.draft and pair.draft != previous_draft and self.settings.mode == "baseline":
            self.settings.mode = "draft"
        mode = self.settings.mode if pair.available_modes.get(self.settings.mode) is None else "baseline"
        self.speculation.set_mode(mode)
        if pair.draft_error:
            self.settings.draft_path = None
            self.model_bar.select_draft(None)
            self.banner.show_message(f"The draft was not loaded: {pair.draft_error}", "error")
        self.save()
        self._update_mode_label()

    def _on_load_failed(self, message: str) -> None:
        self.model_bar.set_loaded("Load failed")
        self.composer.set_ready(False, "No model is loaded")
        self.banner.show_message(message, "error")

    def _model_folders(self) -> list[str]:
        roots = list(self.settings.extra_model_dirs)
        for path in (self.settings.target_path, self.settings.draft_path):
            if path:
                roots.append(str(Path(path).parent))
        return find_model_folders(roots)

    def _offer_drafts(self, target: str) -> None:
        candidates = [f for f in self._model_folders() if Path(f) != Path(target)]
        self.model_bar.set_drafts(candidates, {}, self.settings.draft_path)
        self.client.check_drafts(target, candidates)

    def _on_drafts_checked(self, target: str, results) -> None:
        if target != self.model_bar.target_path():
            return
        keep = self.model_bar.draft_path()
        reasons = {r.path: r.reason for r in results if not r.compatible}
        self.model_bar.set_drafts([r.path for r in results], reasons, keep)

    def _remember_folder(self, folder: str) -> None:
        parent = str(Path(folder).parent)
        if parent not in self.settings.extra_model_dirs:
            self.settings.extra_model_dirs.append(parent)
            self.save()

    # --- settings ---

    def reply_settings(self) -> tuple[GenerationConfig, bool]:
        """The config and thinking switch of the next reply."""
        self.panel.flush()
        s = self.settings
        cfg = GenerationConfig(mode=self.speculation.checked_mode(), num_draft_tokens=self.speculation.current_k,
                               max_tokens=s.max_tokens, temperature=s.temperature, top_p=s.top_p,
                               top_k=s.top_k, min_p=s.min_p)
        return cfg, self.composer.thinking.isChecked()

    def _mode_chosen(self, mode: str) -> None:
        self.settings.mode = mode
        self.save()
        self._update_mode_label()

    def _k_chosen(self, k: int) -> None:
        self.settings.num_draft_tokens = min(k, 16)
        self.save()
        self._update_mode_label()

    def _color_toggled(self, on: bool) -> None:
        self.settings.color_draft_tokens = on
        self.transcript.set_color_drafts(on)
        self.legend.setVisible(on)
        self.save()

    def _thinking_toggled(self, on: bool) -> None:
        self.settings.enable_thinking = on
        self.thinking_action.setChecked(on)
        self.save()

    def _sampling_changed(self, values: dict) -> None:
        for name, value in values.items():
            setattr(self.settings, name, value)
        self.save()

    def _update_mode_label(self) -> None:
        mode = self.speculation.checked_mode()
        text = f"Speculation: {MODE_NAMES[mode]}"
        if mode != "baseline":
            text += f" · K={self.speculation.current_k}"
        self.mode_label.setText(text)
        self.mode_label.setMinimumWidth(self.mode_label.sizeHint().width())

    def _on_busy(self, busy: bool) -> None:
        self.stop_action.setEnabled(busy)
        self.regenerate_action.setEnabled(not busy)
        self.model_bar.load_button.setEnabled(not busy)

    def save(self) -> None:
        """Write the settings file."""
        save_settings(self.paths, self.settings)

    # --- conversations ---

    def _rename_current(self) -> None:
        if self.chat.conversation_id is not None:
            self.sidebar.rename_interactive(self.chat.conversation_id)

    def _delete_current(self) -> None:
        if self.chat.conversation_id is not None:
            self.sidebar.delete_interactive(self.chat.conversation_id)

    def closeEvent(self, event) -> None:
        self.settings.window_geometry = base64.b64encode(bytes(self.saveGeometry())).decode("ascii")
        self.save()
        self.client.shutdown()
        self.store.close()
        super().closeEvent(event)
