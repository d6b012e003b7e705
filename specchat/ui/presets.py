"""The Settings panel's Preset combo: pick a preset for the open chat (it fills the panel and is remembered on the
chat), see it marked modified ("Coding *") once a field changes, save the fields as a preset, manage presets; a new
chat starts from the default preset. The rows are in store/presets.py."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QDialog, QInputDialog, QMessageBox, QWidget

from specchat.store.conversations import ConversationStore
from specchat.store.presets import (
    Preset,
    PresetError,
    chat_settings,
    default_preset,
    preset,
    presets,
    save_preset,
    set_chat_preset,
    set_chat_sampling,
    update_preset,
)

from .preset_dialog import PresetDialog

if TYPE_CHECKING:
    from .chat.controller import ChatController
    from .settings_panel import SettingsPanel

NONE, PRESET, SAVE_NEW, SAVE_CHANGES, MANAGE = "none", "preset", "save", "update", "manage"
MODIFIED = " *"

AskName = Callable[[QWidget, str, str], str | None]  # parent, question, suggested name -> the name or None
Warn = Callable[[QWidget, str], None]


def ask_name(parent: QWidget, question: str, suggested: str) -> str | None:
    """Ask for a preset's name; None when cancelled."""
    text, ok = QInputDialog.getText(parent, "Preset", question, text=suggested)
    return text if ok else None


def warn(parent: QWidget, message: str) -> None:
    """Say what was wrong with what the user asked for."""
    QMessageBox.warning(parent, "Preset", message)


def run_dialog(dialog: QDialog) -> None:
    """Show a dialog and wait for it to close."""
    dialog.exec()


class PresetControl(QObject):
    """Follows the open chat's preset in the panel's combo and keeps it, and the chat's own sampling, in the store."""

    storeFailed = Signal(str)  # a preset or a chat's preset could not be saved: what applies now stays on screen

    def __init__(self, panel: SettingsPanel, chat: ChatController, parent: QWidget):
        super().__init__(parent)
        self.panel, self.chat, self.window = panel, chat, parent
        self.current: Preset | None = None  # the open chat's preset
        self.ask_name: AskName = ask_name  # dialogs: tests put answers here
        self.warn: Warn = warn
        self.run_dialog: Callable[[QDialog], None] = run_dialog
        self._presets: list[Preset] = []
        self._own_sampling = False  # the open chat keeps its own sampling (it has, or had, a preset)
        self._unsaved_chat = chat.conversation_id is None  # a new chat: its preset is kept once it is saved
        self._filling = False  # the panel changes because a preset or a chat is shown, not because the user typed
        panel.preset.activated.connect(self._activated)
        panel.samplingChanged.connect(self._sampling_edited)
        panel.maxTokensChanged.connect(lambda _value: self._edited())
        panel.system_prompt.textChanged.connect(self._edited)
        # connected after the chat's own slots: by then a new chat may have been saved
        panel.systemPromptChanged.connect(lambda _text: self._adopt_new_chat())
        chat.replyStarted.connect(lambda _id: self._adopt_new_chat())
        chat.conversationSwitched.connect(self._switched)
        self.refresh()

    @property
    def store(self) -> ConversationStore:
        """The chat's store (it may be swapped for an in-memory copy when the disk fills)."""
        return self.chat.store

    def modified(self) -> bool:
        """True when the panel no longer shows the chat's preset as saved."""
        return self.current is not None and self.panel.fields() != self.current.fields

    # --- chats ---

    def _switched(self, conversation_id: int | None) -> None:
        if conversation_id is None:
            self._unsaved_chat = True  # new_chat_shown() fills it once the window has cleared the panel
        else:
            self.chat_opened(conversation_id)

    def chat_opened(self, conversation_id: int) -> None:
        """Show a saved chat: its preset in the combo, its own sampling (else its preset's) and system prompt."""
        kept = chat_settings(self.store, conversation_id)
        self._unsaved_chat = False
        self.current = preset(self.store, kept.preset_id)
        self._own_sampling = kept.sampling is not None or self.current is not None
        sampling = kept.sampling or (self.current.fields.sampling() if self.current else None)
        self._filling = True
        try:
            if sampling is not None:
                self.panel.show_sampling(sampling)
            self.panel.set_system_prompt(self.chat.system_prompt())
        finally:
            self._filling = False
        self.refresh()

    def new_chat_shown(self) -> None:
        """A new chat starts from the default preset, if one is marked (else from the panel as it is)."""
        self._unsaved_chat = True
        self.current = default_preset(self.store)
        self._own_sampling = self.current is not None
        if self.current is not None:
            self._fill(self.current)
        self.refresh()

    def _adopt_new_chat(self) -> None:
        """A new chat was just saved (its system prompt or first message): it keeps the preset it was shown with."""
        if self._unsaved_chat and self.chat.conversation_id is not None:
            self._unsaved_chat = False
            if self.current is not None:
                self._remember()

    # --- the combo ---

    def _activated(self, index: int) -> None:
        kind, preset_id = self.panel.preset.itemData(index)
        if kind == PRESET:
            self.pick(preset(self.store, preset_id))
        elif kind == NONE:
            self.pick(None)
        elif kind == SAVE_NEW:
            self.save_as_new()
        elif kind == SAVE_CHANGES:
            self.save_changes()
        elif kind == MANAGE:
            self.manage()
        self.refresh()  # an action is not a choice: the combo shows the chat's preset again

    def pick(self, chosen: Preset | None) -> None:
        """Give the open chat a preset (filling the panel) or none (the panel stays as it is)."""
        self.current = chosen
        self._own_sampling = chosen is not None
        if chosen is not None:
            self._fill(chosen)
        self._remember()
        self.refresh()

    def save_as_new(self) -> None:
        """Save what the panel shows as a new preset, asking its name; it becomes the open chat's preset."""
        self.panel.flush(typed_only=True)  # a prompt being typed belongs to the chat as well as to the preset
        suggested = self.current.name if self.current is not None else ""
        name = self.ask_name(self.window, "Name of the new preset:", suggested)
        if name is None:
            return
        try:
            saved = save_preset(self.store, name, self.panel.fields())
        except PresetError as error:
            self.warn(self.window, str(error))
            return
        except sqlite3.Error as error:
            self.storeFailed.emit(f"Could not save the preset to {self.store.path} ({error})")
            return
        self.current = saved
        self._own_sampling = True
        self._remember()
        self.refresh()

    def save_changes(self) -> None:
        """Save what the panel shows into the open chat's preset."""
        if self.current is None:
            return
        self.panel.flush(typed_only=True)
        try:
            update_preset(self.store, self.current.id, self.panel.fields())
        except sqlite3.Error as error:
            self.storeFailed.emit(f"Could not save the preset “{self.current.name}” ({error})")
            return
        self.current = preset(self.store, self.current.id)
        self.refresh()

    def manage(self) -> None:
        """Rename, delete and mark the default preset in a small dialog."""
        dialog = PresetDialog(self.store, self.window, self.ask_name, self.warn)
        self.run_dialog(dialog)
        self.current = preset(self.store, self.current.id) if self.current is not None else None
        self.refresh()

    def refresh(self) -> None:
        """List the presets (and the actions) in the combo, the chat's preset chosen and marked when modified."""
        self._presets = presets(self.store)
        if self.current is not None and all(p.id != self.current.id for p in self._presets):
            self.current = None  # deleted
        combo, modified = self.panel.preset, self.modified()
        combo.blockSignals(True)
        combo.clear()
        combo.addItem("None", (NONE, None))
        for each in self._presets:
            mine = self.current is not None and each.id == self.current.id
            combo.addItem(each.name + (MODIFIED if mine and modified else ""), (PRESET, each.id))
            if mine:
                combo.setCurrentIndex(combo.count() - 1)
        combo.insertSeparator(combo.count())
        if self.current is not None and modified:
            combo.addItem(f"Save changes to “{self.current.name}”", (SAVE_CHANGES, self.current.id))
        combo.addItem("Save current as preset…", (SAVE_NEW, None))
        combo.addItem("Manage presets…", (MANAGE, None))
        if self.current is None:
            combo.setCurrentIndex(0)
        combo.setToolTip(_tip(self.current, modified))
        combo.blockSignals(False)

    # --- fields ---

    def _fill(self, chosen: Preset) -> None:
        self._filling = True
        try:
            self.panel.fill(chosen.fields, prompt_now=self.chat.conversation_id is not None)
        finally:
            self._filling = False

    def _edited(self) -> None:
        if not self._filling:
            self.refresh()

    def _sampling_edited(self, values: dict) -> None:
        cid = self.chat.conversation_id
        if not self._filling and self._own_sampling and cid is not None:
            self._write(set_chat_sampling, cid, values)
        self._edited()

    def _remember(self) -> None:
        """Keep the open chat's preset and sampling (a new chat's wait until it is saved)."""
        cid = self.chat.conversation_id
        if cid is None:
            return
        if self.current is None:
            self._write(set_chat_preset, cid, None, None)
        else:
            self._write(set_chat_preset, cid, self.current.id, self.panel.values())

    def _write(self, write: Callable[..., None], *args: object) -> None:
        try:
            write(self.store, *args)
        except (sqlite3.Error, KeyError) as error:
            self.storeFailed.emit(f"Could not save this chat's preset to {self.store.path} ({error}): it applies now")


def _tip(current: Preset | None, modified: bool) -> str:
    if current is None:
        return "No preset: pick one to fill the system prompt and sampling, or save these settings as one"
    if modified:
        return f"“{current.name}”, changed here: choose “Save changes” to keep the changes in the preset"
    return f"“{current.name}”: this chat's system prompt and sampling come from it"
