"""The main window's menu bar and keyboard (the Chat, Speculation, Server and View menus, Esc, the quick
switcher, the Tab order) and the chat commands they run. A mixin of MainWindow."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import QWidget

from specchat.engine.modes import SpecMode

from .chat.conversation_list import PIN_SHORTCUT
from .mixin_bases import MainWindowPart
from .preferences_link import PreferencesLink
from .quick_switcher import SHORTCUT as SWITCHER_SHORTCUT
from .quick_switcher import QuickSwitcher, ShortcutKeeper, combo_pairs, tab_stops
from .quit_check import confirm_quit
from .server_link import ServerLink
from .speculation_menu import SpeculationMenu

if TYPE_CHECKING:
    from PySide6.QtWidgets import QLabel

    from specchat.paths import AppPaths
    from specchat.settings import Settings
    from specchat.store import ConversationStore

    from .analysis_docks import AnalysisDocks
    from .banner import Banner
    from .chat.composer import Composer
    from .chat.controller import ChatController
    from .chat.conversation_list import ConversationList
    from .chat.transcript import TranscriptView
    from .main_window import MainWindow
    from .model_bar import ModelBar
    from .models_link import ModelsLink
    from .presets import PresetControl
    from .settings_panel import SettingsPanel


MODELS_SHORTCUT = "Ctrl+Shift+M"


class MainMenus(MainWindowPart):
    """The menus, shortcuts and Tab order; MainWindow supplies the widgets, settings and store they act on."""

    # what MainWindow supplies (declared for the type checker; nothing is set here)
    settings: Settings
    paths: AppPaths
    store: ConversationStore
    chat: ChatController
    sidebar: ConversationList
    transcript: TranscriptView
    composer: Composer
    panel: SettingsPanel
    model_bar: ModelBar
    banner: Banner
    legend: QLabel
    docks: AnalysisDocks
    models: ModelsLink
    presets: PresetControl
    save: Callable[[], None]
    _apply_chat_settings: Callable[[Settings], None]  # WindowSettings'
    use_models: Callable[[str, str | None, str | None], None]  # PairControl's
    dflash_for: Callable[[str | None], str | None]  # PairControl's

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
        self.server = ServerLink(cast("MainWindow", self))  # only a MainWindow mixes this in
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

    def _on_busy(self, busy: bool) -> None:
        self.stop_action.setEnabled(busy)
        self.regenerate_action.setEnabled(not busy)
        self.model_bar.load_button.setEnabled(not busy)

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
