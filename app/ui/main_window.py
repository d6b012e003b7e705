"""The main window: sidebar, transcript and composer, settings panel, model toolbar, menus, analysis docks."""

from __future__ import annotations

import base64
from pathlib import Path

from PySide6.QtCore import QByteArray, QSize, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLabel, QMainWindow, QSplitter, QVBoxLayout, QWidget

from app.engine import GenerationConfig
from app.engine.config import MTP_MAX_DEPTH
from app.paths import AppPaths
from app.settings import Settings, load_settings, save_settings
from app.store import ConversationStore

from . import theme
from .analysis_docks import AnalysisDocks
from .banner import Banner
from .chat.composer import Composer
from .chat.controller import ChatController
from .chat.conversation_list import ConversationList
from .chat.footer import MODE_NAMES
from .chat.transcript import TranscriptView
from .engine_client import EngineClient
from .model_bar import ModelBar
from .model_folders import find_model_folders
from .models_link import ModelsLink
from .screen_fit import fit_to_screen
from .settings_panel import SettingsPanel
from .speculation_menu import AUTO, SpeculationMenu, tuned_k
from .worker import LoadedPair

DEFAULT_SIZE = (1280, 820)
MODELS_SHORTCUT = "Ctrl+Shift+M"
ENGINE_LENT = "A sweep or an A/B comparison is using the engine; wait for it or cancel it"


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
        self._fitted = False
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
        self.docks = AnalysisDocks(self, self.paths, self.client)
        self.models = ModelsLink(self, self.paths, self.settings,
                                 lambda: (self.model_bar.target_path(), self.model_bar.draft_path()))

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
        self.speculation.history_action.setChecked(self.settings.mtp_history)
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
        self.models_action = QAction("Models…", self, shortcut=QKeySequence(MODELS_SHORTCUT))
        self.models_action.setToolTip("Find, download and pair models")
        self.models_action.triggered.connect(self.models.open)
        for action in (self.docks.dashboard_action, self.docks.sweep_action, self.models_action):
            view.addAction(action)
        view.addSeparator()
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
        self.model_bar.managerRequested.connect(self.models.open)
        self.models.chosen.connect(self.use_models)
        self.models.needsTarget.connect(lambda: self.banner.show_message(
            "Choose a target model first; a draft needs a target to draft for.", "warning"))
        self.docks.engineLent.connect(self._on_engine_lent)
        self.docks.bestKSaved.connect(self._best_k_saved)
        self.speculation.modeChosen.connect(self._mode_chosen)
        self.speculation.draftTokensChosen.connect(self._k_chosen)
        self.speculation.mtpHistoryChosen.connect(self._mtp_history_chosen)
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
            fit_to_screen(self, QSize(*DEFAULT_SIZE))
        state = self.settings.window_state
        if not (state and self.restoreState(QByteArray(base64.b64decode(state)))):
            self.docks.first_start_layout()
        else:
            QTimer.singleShot(0, self.docks.fit_restored_layout)  # once shown and laid out
        self.model_bar.set_targets(self._model_folders(), self.settings.target_path)
        if self.settings.target_path:
            self._offer_drafts(self.settings.target_path)
        self.sidebar.refresh()
        recent = self.sidebar.ids()
        if recent:
            self.chat.open(recent[0])
            self.panel.set_system_prompt(self.chat.system_prompt())
        self._update_mode_label()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._fitted:  # the frame is known once shown: a saved or default size must still fit
            self._fitted = True
            fit_to_screen(self)

    def chat_column_need(self, chat_width: int) -> int:
        """The central widget's width when the chat column is chat_width wide and the side columns are at
        their minimum."""
        sides = [w.minimumWidth() for w in (self.sidebar, self.panel) if not w.isHidden()]
        handles = self.splitter.handleWidth() * (len(sides))
        return chat_width + sum(sides) + handles

    def make_chat_room(self, chat_width: int) -> None:
        """Narrow the conversation list and the settings panel (not below their minimum) until the chat
        column is chat_width wide."""
        sizes = self.splitter.sizes()
        short = chat_width - sizes[1]
        for i in (2, 0):  # the settings panel gives first
            if short <= 0:
                break
            widget = self.splitter.widget(i)
            give = min(short, max(0, sizes[i] - widget.minimumWidth())) if not widget.isHidden() else 0
            sizes[i] -= give
            sizes[1] += give
            short -= give
        self.splitter.setSizes(sizes)

    # --- models ---

    def load_models(self, target: str, draft: str | None = None) -> None:
        """Load a target and optional draft on the engine thread."""
        if self.docks.lent:
            self.banner.show_message(f"Models cannot be loaded now. {ENGINE_LENT}.", "warning")
            return
        self.chat.stop()
        self.pair = None
        self.composer.set_ready(False, "Models are loading")
        self.speculation.set_available(None)
        self.model_bar.set_loading(f"Loading {Path(target).name}…")
        self.transcript.empty.set_model_state(False)
        self.settings.target_path, self.settings.draft_path = target, draft
        self.save()
        self.docks.set_loading()
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
        if pair.draft and pair.draft != previous_draft and self.settings.mode == "baseline":
            self.settings.mode = "draft"
        mode = self.settings.mode if pair.available_modes.get(self.settings.mode) is None else "baseline"
        self.speculation.set_mode(mode)
        self._refresh_tuned_k()
        if pair.draft_error:
            self.settings.draft_path = None
            self.model_bar.select_draft(None)
            self.banner.show_message(f"The draft was not loaded: {pair.draft_error}", "error")
        self.save()
        self._update_mode_label()
        self.docks.set_loaded(pair)

    def _on_load_failed(self, message: str) -> None:
        self.docks.set_loaded(None)
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

    def use_models(self, target: str, draft: str | None) -> None:
        """Pick a target (and draft) in the toolbar and load them (from the Models window)."""
        if self.docks.lent:
            self.banner.show_message(f"Models cannot be loaded now. {ENGINE_LENT}.", "warning")
            return
        self.settings.target_path, self.settings.draft_path = target, draft
        self.model_bar.set_targets(self._model_folders(), target)
        self._offer_drafts(target)
        self.load_models(target, draft)

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
        mode, k = self.speculation.checked_mode(), self.speculation.current_k
        if mode == "mtp" and k != AUTO:
            k = min(k, MTP_MAX_DEPTH)  # the head drafts at most this deep
        cfg = GenerationConfig(mode=mode, num_draft_tokens=k,
                               max_tokens=s.max_tokens, temperature=s.temperature, top_p=s.top_p,
                               top_k=s.top_k, min_p=s.min_p, mtp_history=s.mtp_history)
        return cfg, self.composer.thinking.isChecked()

    def _mode_chosen(self, mode: str) -> None:
        self.settings.mode = mode
        self._refresh_tuned_k()
        self.save()
        self._update_mode_label()

    def _mtp_history_chosen(self, on: bool) -> None:
        self.settings.mtp_history = on
        self.save()

    def _k_chosen(self, k: int | str) -> None:
        self.settings.num_draft_tokens = k if k == AUTO else min(k, 16)
        self.save()
        self._update_mode_label()

    def _refresh_tuned_k(self) -> None:
        """Show the tuned K of the pair the checked mode uses (target + draft, or target + MTP head)."""
        pair, mode = self.pair, self.speculation.checked_mode()
        drafter = None if pair is None or mode == "lookup" else "mtp" if mode == "mtp" else pair.draft
        self.speculation.set_tuned_k(tuned_k(self.paths, pair.target if pair else None, drafter))

    def _best_k_saved(self, _best: dict) -> None:
        self._refresh_tuned_k()
        k = self.speculation.tuned_k
        if k is not None and self.speculation.current_k != AUTO:
            self.speculation.set_k(k)
            self._k_chosen(k)

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
            k = self.speculation.current_k
            text += " · K auto" if k == AUTO else f" · K={k}"
        self.mode_label.setText(text)
        self.mode_label.setMinimumWidth(self.mode_label.sizeHint().width())

    def _on_busy(self, busy: bool) -> None:
        self.stop_action.setEnabled(busy)
        self.regenerate_action.setEnabled(not busy)
        self.model_bar.load_button.setEnabled(not busy)
        self.docks.set_replying(busy)

    def _on_engine_lent(self, lent: bool) -> None:
        """While a sweep or A/B uses the engine, nothing may send it work."""
        if lent:
            self.composer.set_ready(False, ENGINE_LENT)
        else:
            self.composer.set_ready(self.pair is not None, "No model is loaded")
        self.transcript.set_busy(lent or self.chat.busy)
        self.regenerate_action.setEnabled(not (lent or self.chat.busy))
        self.model_bar.load_button.setEnabled(not lent)

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
        if not self.models.close():
            event.ignore()  # the user kept a download running
            return
        self.settings.window_geometry = base64.b64encode(bytes(self.saveGeometry())).decode("ascii")
        self.settings.window_state = base64.b64encode(bytes(self.saveState())).decode("ascii")
        self.save()
        self.docks.stop()
        self.client.shutdown()
        self.store.close()
        super().closeEvent(event)
