"""The main window: sidebar, transcript and composer, settings panel, model toolbar, menus, analysis docks."""

from __future__ import annotations

import base64
from pathlib import Path

from PySide6.QtCore import QByteArray, QSize, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import QLabel, QMainWindow, QSplitter, QVBoxLayout, QWidget

from specchat.engine.modes import SpecMode
from specchat.paths import AppPaths
from specchat.settings import Settings, save_settings

from . import theme
from .analysis_docks import CHAT_MIN, AnalysisDocks
from .banner import Banner
from .chat.composer import Composer
from .chat.context_fill import fill_for
from .chat.controller import ChatController
from .chat.conversation_list import PIN_SHORTCUT, ConversationList
from .chat.footer import MODE_NAMES
from .chat.transcript import TranscriptView
from .engine_client import EngineClient, LoadedPair, queue_text
from .first_window import DEFAULT_SIZE
from .model_bar import ModelBar
from .models_link import ModelsLink
from .pair_control import PairControl
from .pair_memory import PairMemory
from .pair_note import PairNote
from .preferences_link import PreferencesLink
from .presets import PresetControl
from .quick_switcher import SHORTCUT as SWITCHER_SHORTCUT
from .quick_switcher import QuickSwitcher, ShortcutKeeper, combo_pairs, tab_stops
from .quit_check import confirm_quit
from .screen_fit import RefitWhenFramed, fit_to_screen
from .server_link import ServerLink
from .settings_panel import SettingsPanel
from .speculation_control import SpeculationControl
from .speculation_menu import AUTO, SpeculationMenu
from .startup import open_storage
from .theme_switch import follow

MODELS_SHORTCUT = "Ctrl+Shift+M"


class MainWindow(PairControl, SpeculationControl, QMainWindow):
    """SpecChat's one window. Loads the saved (or given) target, draft and DFlash drafter on start."""

    def __init__(
        self,
        paths: AppPaths | None = None,
        target: str | None = None,
        draft: str | None = None,
        autoload: bool = True,
        dflash: str | None = None,
    ):
        super().__init__()
        storage = open_storage(paths or AppPaths.default())  # never raises: what went wrong comes back as notices
        self.storage = storage  # holds the scratch folder (if any) alive until the window goes
        self._settings_unsaved = False  # the last settings write failed (said once)
        self.paths = storage.paths  # unwritable folders swapped for a scratch folder deleted at exit
        self.settings: Settings = storage.settings
        self.read_only = storage.read_only
        # what to load first: the given pair, else the saved one; settings change only once a pair loaded
        self.requested = (self.settings.target_path, self.settings.draft_path, _saved_dflash(self.settings))
        self._cli_target: str | None = None  # a --target folder: remembered in the model folders once it loads
        self._cli_dflash: str | None = None  # a --dflash folder: DFlash is the mode once it loads
        if target:
            self.requested = (_full(target), _full(draft) if draft else None, _full(dflash) if dflash else None)
            self._cli_target, self._cli_dflash = self.requested[0], self.requested[2]
        self.pair: LoadedPair | None = None
        self._load_banner = False  # the banner shows why a load failed (cleared once a load succeeds)
        self.store = storage.store
        self.client = EngineClient(self, memory=PairMemory(self.paths))  # what speculation learned, per pair
        self.setWindowTitle("SpecChat")
        self._build()
        self._build_menus()
        self._connect()
        self._build_keyboard()
        self.preferences.apply_settings()  # send key, theme, power policy, dashboard charts
        follow(self, self._restyle)
        self._restore()
        notice = storage.banner()
        if notice:
            self.banner.show_message(notice[1], notice[0])
        target, draft, dflash = self.requested
        if autoload and target:
            self.load_models(target, draft, dflash)

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
        center = QWidget(objectName="centralArea")  # type: ignore[call-arg]
        center.setMinimumWidth(CHAT_MIN)  # a dock or a dragged splitter never squeezes the chat below this
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
        self._refit = RefitWhenFramed(self)
        self.setCentralWidget(self.splitter)
        self.mode_label = QLabel()
        self.queue_label = QLabel()  # what the engine runs and what waits for it
        self.queue_label.setObjectName("footer")
        self.legend = QLabel()
        self.legend.setMinimumWidth(1)  # a narrow window clips the legend rather than growing past the screen
        self.legend.setToolTip(
            "Each speculative round ends with one token the target chooses itself, after the "
            "drafts it accepted: so even a fully accepted reply has one untinted token per round. "
            "Plain decoding (speculation off, or auto K at K=0) is untinted throughout."
        )
        self.legend.setObjectName("footer")
        self.statusBar().addWidget(self.legend)
        self.statusBar().addPermanentWidget(self.queue_label)
        self.statusBar().addPermanentWidget(self.mode_label)
        self.chat = ChatController(
            self.store, self.client, self.transcript, self.composer, self.sidebar, self.reply_settings, self
        )
        self.pair_note = PairNote(self.chat, lambda: self.pair)  # "This chat used <pair> · Load it"
        column.insertWidget(column.indexOf(self.composer), self.pair_note)
        self.context_fill = fill_for(self)  # the composer's token count and its check before Send
        self.composer.thinking.setChecked(self.settings.enable_thinking)
        self.composer.set_ready(False, "Load a model first")
        self.docks = AnalysisDocks(self, self.paths, self.client)
        self.models = ModelsLink(self, self.paths, self.settings, self._picked_models)

    def _build_menus(self) -> None:
        bar = self.menuBar()
        chat = bar.addMenu("&Chat")
        self.new_action = chat.addAction("New chat", QKeySequence(QKeySequence.StandardKey.New), self.new_chat)
        self.stop_action = chat.addAction("Stop reply", QKeySequence("Ctrl+."), self.chat.stop)
        self.regenerate_action = chat.addAction("Regenerate reply", QKeySequence("Ctrl+R"), self.chat.regenerate)
        chat.addAction(self.chat.continue_action)
        chat.addSeparator()
        chat.addAction("Rename conversation…", QKeySequence("F2"), self._rename_current)
        chat.addAction("Delete conversation…", self._delete_current)
        self.pin_action = chat.addAction(
            "Pin or unpin conversation",
            QKeySequence(PIN_SHORTCUT),
            lambda: self.sidebar.toggle_pin(self.chat.conversation_id),
        )
        export = chat.addMenu("Export conversation…")
        self.export_markdown_action = export.addAction("Markdown…", lambda: self.chat.actions.export("markdown"))
        self.export_json_action = export.addAction("JSON…", lambda: self.chat.actions.export("json"))
        self.import_action = chat.addAction("Import conversations…", self.sidebar.import_interactive)
        self.sidebar.notice.connect(lambda message, level: self.banner.show_message(message, level))
        chat.addSeparator()
        self.preferences = PreferencesLink(
            self, self.settings, self.paths.data_dir, self.docks.dashboard, self._apply_chat_settings, self.save
        )
        chat.addAction(self.preferences.action)  # macOS moves it to the application menu
        self.quit_action = chat.addAction("Quit", QKeySequence.StandardKey.Quit, self.quit)
        # Esc stops the reply and leaves edit mode wherever the focus is in the window
        self.escape = QShortcut(
            QKeySequence(Qt.Key.Key_Escape), self, self.escape_pressed, context=Qt.ShortcutContext.WindowShortcut
        )
        self.speculation = SpeculationMenu(self)
        bar.addMenu(self.speculation)
        self.server = ServerLink(self)
        bar.addMenu(self.server.menu)
        self.speculation.set_k(self.settings.num_draft_tokens)
        self.speculation.set_mode(SpecMode.BASELINE)
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
        client = self.client
        client.loadProgress.connect(self.model_bar.set_loading)
        client.loaded.connect(self._on_loaded)
        client.loadFailed.connect(self._on_load_failed)
        client.memoryChanged.connect(self.model_bar.set_memory)
        client.draftsChecked.connect(self._on_drafts_checked)
        client.queueChanged.connect(lambda state: self.queue_label.setText(queue_text(state)))
        bandwidth = self.docks.dashboard.bandwidth_line
        bandwidth.measureRequested.connect(client.measure_bandwidth)
        client.bandwidthMeasured.connect(bandwidth.set_bandwidth)
        client.bandwidthFailed.connect(bandwidth.measure_failed)
        client.bandwidth_wanted = lambda: bandwidth.bandwidth is None and not bandwidth.measuring
        self.chat.replyFailed.connect(lambda message: self.banner.show_message(message, "error"))
        self.chat.settingsRejected.connect(lambda message: self.banner.show_message(message, "error"))
        self.chat.storeFailed.connect(lambda message: self.banner.show_message(message, "warning"))
        self.chat.storeRecovered.connect(self.banner.dismiss)
        self.chat.storeReplaced.connect(self._store_replaced)
        self.chat.busyChanged.connect(self._on_busy)
        self.chat.actions.exported.connect(lambda path: self.banner.show_message(f"Exported to {path}", "info"))
        self.chat.actions.exportFailed.connect(lambda message: self.banner.show_message(message, "error"))
        self.model_bar.loadRequested.connect(self.load_pressed)
        self.model_bar.dflashDropped.connect(self.drop_dflash)
        self.model_bar.targetChanged.connect(self._offer_drafts)
        self.model_bar.folderBrowsed.connect(self._remember_folder)
        self.model_bar.managerRequested.connect(self.models.open)
        self.model_bar.targetMissing.connect(lambda message: self.banner.show_message(message, "warning"))
        self.transcript.empty.modelsRequested.connect(self.models.open)
        self.models.chosen.connect(self.use_models)
        self.models.needsTarget.connect(
            lambda: self.banner.show_message(
                "Choose a target model first; a draft or DFlash drafter needs a target to draft for.", "warning"
            )
        )
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
        self.sidebar.newRequested.connect(self._new_chat_shown)
        self.chat.replyStarted.connect(lambda _id: self.banner.dismiss() if self.banner.level == "error" else None)
        client.loaded.connect(lambda _pair: self.pair_note.refresh())  # after _on_loaded: self.pair is the new one
        self.pair_note.loadRequested.connect(self._load_chat_pair)
        self.presets = PresetControl(self.panel, self.chat, self)  # after the chat's slots on the panel
        self.presets.storeFailed.connect(lambda message: self.banner.show_message(message, "warning"))

    def _build_keyboard(self) -> None:
        """Ctrl+K opens the quick switcher; Tab goes through the window as it is laid out: the conversation
        list, the toolbar, the transcript, the composer and Send, the settings panel, the docks."""
        self.switcher = QuickSwitcher(
            lambda: [(c.id, c.title) for c in self.store.conversations()],
            lambda: combo_pairs(self.model_bar.target, self.model_bar.draft),
            self.sidebar.selected.emit,  # as a click in the conversation list
            lambda target, draft: self.use_models(target, draft, self.dflash_for(target)),  # as "Use pair"
            self,
        )
        self.switcher_shortcut = QShortcut(
            QKeySequence(SWITCHER_SHORTCUT), self, self.switcher.popup, context=Qt.ShortcutContext.WindowShortcut
        )
        ShortcutKeeper(SWITCHER_SHORTCUT, self).watch(self)  # Ctrl+K is the switcher's in text fields too
        self.panel.system_prompt.setTabChangesFocus(True)  # Tab goes on to the sampling settings, not a trap
        stops = tab_stops(self.sidebar) + tab_stops(self.model_bar) + tab_stops(self.transcript)
        stops += self.composer.tab_stops() + tab_stops(self.panel)
        stops += tab_stops(self.docks.dashboard) + tab_stops(self.docks.sweep_view)
        for first, second in zip(stops, stops[1:]):
            QWidget.setTabOrder(first, second)

    def _restore(self) -> None:
        geometry = self.settings.window_geometry
        if not (geometry and self.restoreGeometry(QByteArray(base64.b64decode(geometry)))):
            fit_to_screen(self, QSize(*DEFAULT_SIZE))
        state = self.settings.window_state
        if not (state and self.restoreState(QByteArray(base64.b64decode(state)))):
            self.docks.first_start_layout()
        else:
            QTimer.singleShot(0, self.docks.fit_restored_layout)  # once shown and laid out
        target, draft, _dflash = self.requested
        self.model_bar.set_targets(self._model_folders(target, draft), target)
        if target:
            self._offer_drafts(target, draft)
        self.sidebar.refresh()
        recent = self.sidebar.ids()
        if recent:
            self.chat.open(recent[0])
            self.panel.set_system_prompt(self.chat.system_prompt())
        else:
            self.presets.new_chat_shown()  # the default preset, if one is marked
        self._update_mode_label()

    def _load_chat_pair(self, target: str, draft: str | None) -> None:
        """The pair note's Load it: as the toolbar's Load (the DFlash drafter stays with its target)."""
        self.use_models(target, draft, self.dflash_for(target))

    def _picked_models(self) -> tuple[str | None, str | None, str | None]:
        """The toolbar's target and draft, and the DFlash drafter loaded for that target (for the Models window)."""
        target = self.model_bar.target_path()
        return target, self.model_bar.draft_path(), self.dflash_for(target)

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
            assert widget is not None  # the splitter holds the list, the chat column and the panel
            give = min(short, max(0, sizes[i] - widget.minimumWidth())) if not widget.isHidden() else 0
            sizes[i] -= give
            sizes[1] += give
            short -= give
        self.splitter.setSizes(sizes)

    # --- settings ---

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

    def _store_replaced(self, store) -> None:
        """The conversations go on in memory (the disk is full): nothing writes the file from now on."""
        self.store = store
        self.read_only = True

    def save(self) -> None:
        """Write the settings file (not when its folder is not writable: the banner said so); a write that
        fails (a full disk) is said once, and the settings live on for the session."""
        if self.read_only:
            return
        try:
            save_settings(self.paths, self.settings)
        except OSError as error:
            if not self._settings_unsaved:
                self.banner.show_message(
                    f"Could not save settings to {self.paths.settings_file} "
                    f"({error.strerror or error}); they stay as set for this session.",
                    "warning",
                )
            self._settings_unsaved = True
        else:
            self._settings_unsaved = False

    def _apply_chat_settings(self, settings: Settings) -> None:
        """The Preferences that live in the chat: the send key, the default sampling and the context length."""
        self.composer.set_enter_sends(settings.enter_sends)
        self.panel.load(settings)
        self.context_fill.set_context_length(settings.context_length)

    # --- conversations and keys ---

    def new_chat(self) -> None:
        """A new, empty chat (Cmd+N): no system prompt, the cursor in the composer."""
        self.panel.flush(typed_only=True)  # a pending system-prompt edit belongs to the chat being left
        self.chat.new_conversation()
        self._new_chat_shown()

    def _new_chat_shown(self) -> None:
        self.panel.set_system_prompt("")
        self.presets.new_chat_shown()  # the default preset, if one is marked
        self.composer.text.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def escape_pressed(self) -> None:
        """Esc: stop the streaming reply and leave edit mode, wherever the focus is."""
        if self.chat.busy:
            self.chat.stop()
        if self.composer.editing is not None:
            self.composer.leave_edit()

    def _restyle(self) -> None:
        """Apply the current light or dark palette to what the window paints itself."""
        self.setStyleSheet(theme.style_sheet())
        self.legend.setText(
            f"<span style='background:{theme.DRAFT_BG}'>&nbsp;tinted&nbsp;</span> accepted draft"
            f" · <span style='color:{theme.REJECT}'>red dotted</span> rejected draft (hover it)"
            " · untinted: the target's own token"
        )
        if (
            self.isVisible()
            and self.chat.conversation_id is not None
            and not self.chat.busy
            and self.composer.editing is None
        ):
            self.chat.open(self.chat.conversation_id)  # cards and code blocks in the new colours

    def _rename_current(self) -> None:
        if self.chat.conversation_id is not None:
            self.sidebar.rename_interactive(self.chat.conversation_id)

    def _delete_current(self) -> None:
        if self.chat.conversation_id is not None:
            self.sidebar.delete_interactive(self.chat.conversation_id)

    def quit(self) -> None:
        """Chat ▸ Quit: close the window, after asking when the server runs or a reply streams."""
        if self._may_quit():
            self.close()

    def _may_quit(self) -> bool:
        return confirm_quit(self, self.server.controller.running, self.chat.busy)

    def closeEvent(self, event) -> None:
        if event.spontaneous() and not self._may_quit():  # the title bar's close (Quit asked already)
            event.ignore()
            return
        if not self.models.close():
            event.ignore()  # the user kept a download running
            return
        self.panel.flush(typed_only=True)  # one typed just before closing is saved, not fired into a closed store
        self.settings.window_geometry = base64.b64encode(self.saveGeometry().data()).decode("ascii")
        self.settings.window_state = base64.b64encode(self.saveState().data()).decode("ascii")
        self.save()
        self.chat.interrupt()
        self.docks.stop()
        self.server.stop()
        self.client.keep_knowledge()  # after the reply and the sweep stopped: what they taught the controllers
        self.client.shutdown()
        self.store.close()
        self.storage.close()
        super().closeEvent(event)


def _full(folder: str) -> str:
    """A folder given on the command line, as an absolute path."""
    return str(Path(folder).expanduser().resolve())


def _saved_dflash(settings: Settings) -> str | None:
    """The saved DFlash drafter, when its target is saved too and its folder is still there (a drafter that
    went away must not stop the target from loading)."""
    folder = settings.dflash_path
    return folder if folder and settings.target_path and Path(folder).is_dir() else None
