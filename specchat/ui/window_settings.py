"""The settings half of the main window: the View toggles, the sampling and Preferences applied to the
chat, the speculation mode in the status bar, the theme's palette, and the settings file. A mixin of
MainWindow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from specchat.settings import Settings, save_settings

from . import theme
from .chat.footer import MODE_NAMES
from .mixin_bases import MainWindowPart
from .speculation_menu import AUTO

if TYPE_CHECKING:
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QLabel

    from specchat.paths import AppPaths

    from .banner import Banner
    from .chat.composer import Composer
    from .chat.context_fill import ContextFill
    from .chat.controller import ChatController
    from .chat.transcript import TranscriptView
    from .settings_panel import SettingsPanel
    from .speculation_menu import SpeculationMenu


class WindowSettings(MainWindowPart):
    """Keep the settings and what shows them; MainWindow supplies the widgets, the settings and their paths."""

    # what MainWindow supplies (declared for the type checker; nothing is set here)
    settings: Settings
    paths: AppPaths
    read_only: bool
    _settings_unsaved: bool
    chat: ChatController
    transcript: TranscriptView
    composer: Composer
    panel: SettingsPanel
    context_fill: ContextFill
    banner: Banner
    legend: QLabel
    mode_label: QLabel
    speculation: SpeculationMenu
    thinking_action: QAction

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
