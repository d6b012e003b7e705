"""The main window: sidebar, transcript and composer, settings panel, model toolbar, menus, analysis docks."""

from __future__ import annotations

import base64
from pathlib import Path

from PySide6.QtCore import QByteArray, QSize, Qt, QTimer
from PySide6.QtWidgets import QLabel, QMainWindow, QSplitter, QVBoxLayout, QWidget

from specchat.paths import AppPaths
from specchat.settings import Settings

from .analysis_docks import CHAT_MIN, AnalysisDocks
from .banner import Banner
from .chat.composer import Composer
from .chat.context_fill import fill_for
from .chat.controller import ChatController
from .chat.conversation_list import ConversationList
from .chat.transcript import TranscriptView
from .engine_client import EngineClient, LoadedPair
from .first_window import DEFAULT_SIZE
from .job_client import queue_text
from .main_menus import MainMenus
from .model_bar import ModelBar
from .models_link import ModelsLink
from .pair_control import PairControl
from .pair_memory import PairMemory
from .pair_note import PairNote
from .presets import PresetControl
from .screen_fit import RefitWhenFramed, fit_to_screen
from .settings_panel import SettingsPanel
from .speculation_control import SpeculationControl
from .startup import open_storage
from .theme_switch import follow
from .window_settings import WindowSettings


class MainWindow(PairControl, SpeculationControl, MainMenus, WindowSettings, QMainWindow):
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

    def _store_replaced(self, store) -> None:
        """The conversations go on in memory (the disk is full): nothing writes the file from now on."""
        self.store = store
        self.read_only = True

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
