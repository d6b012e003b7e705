"""Regenerate and Continue: write the last reply again (its earlier texts kept as versions), or write more of a
reply cut off at Max tokens; each says in the banner when it cannot do what was asked, or what to expect."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget

from .continuation import CONTINUE_SHORTCUT, CONTINUE_TIP, why_not_continued

if TYPE_CHECKING:
    from .controller import ChatController

GREEDY_REGENERATE = "Temperature is 0: greedy decoding gives the same reply; raise the temperature to get another."
REGENERATE_TEMPERATURE = 0.7  # what the banner offers a greedy regeneration instead


class ReplyCommands:
    """Regenerate and Continue for a ChatController's open conversation."""

    def __init__(self, chat: ChatController):
        self.chat = chat

    def regenerate(self, temperature: float | None = None) -> None:
        """Generate the last reply again (at this temperature, when given); the earlier ones stay as versions."""
        chat = self.chat
        if chat.busy or chat.conversation_id is None:
            return
        settings = chat.valid_reply_settings()
        if settings is None:
            return
        if temperature is not None:
            settings = (replace(settings[0], temperature=temperature), settings[1])
        messages = chat.store.messages(chat.conversation_id)
        if messages and messages[-1].role == "assistant":
            if settings[0].temperature == 0:
                self._say_greedy()
            chat.stream.start(settings, again=messages[-1])
        elif messages:
            chat.stream.start(settings)

    def _say_greedy(self) -> None:
        """Regenerating at temperature 0 gives the reply again, word for word: say so, with an offer."""
        chat = self.chat
        chat.greedyRegenerate.emit(GREEDY_REGENERATE)
        banner = getattr(chat.parent(), "banner", None)
        if banner is not None:
            offer = (f"Regenerate at {REGENERATE_TEMPERATURE:g}", lambda: chat.regenerate_at(REGENERATE_TEMPERATURE))
            banner.show_message(GREEDY_REGENERATE, "info", action=offer)

    def continue_reply(self) -> None:
        """Write more of the last reply, cut off at Max tokens; otherwise the banner says why not."""
        chat = self.chat
        messages = chat.store.messages(chat.conversation_id) if chat.conversation_id is not None else []
        reply = messages[-1] if messages else None
        why = why_not_continued(reply, True, chat.busy)
        if why is not None or reply is None:
            self._refuse_continue(why or "")
            return
        settings = chat.valid_reply_settings()
        if settings is not None:
            chat.stream.start(settings, continuing=reply)

    def _refuse_continue(self, why: str) -> None:
        self.chat.continueRefused.emit(why)
        banner = getattr(self.chat.parent(), "banner", None)
        if banner is not None:
            banner.show_message(why, "info")


def continue_action(chat: ChatController, window: QObject | None) -> QAction:
    """Continue the last reply from the keyboard, anywhere in the window (also for a menu); it stays enabled so
    that pressing it when the reply cannot be continued says why."""
    action = QAction("Continue reply", chat)
    action.setShortcut(QKeySequence(CONTINUE_SHORTCUT))
    action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    action.setToolTip(CONTINUE_TIP)
    action.triggered.connect(chat.continue_reply)
    if isinstance(window, QWidget):
        window.addAction(action)
    return action
