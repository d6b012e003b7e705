"""The chat's own pair: each chat remembers the target/draft pair it was last replied with, and a one-line note above
the composer offers it when another pair is loaded ("This chat used <target> + <draft> · Load it"). It never loads
by itself."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton

from specchat.store.presets import ChatSettings, chat_settings, set_chat_pair

from .engine_client import LoadedPair

if TYPE_CHECKING:
    from .chat.controller import ChatController

log = logging.getLogger(__name__)


def same_pair(kept: ChatSettings, loaded: LoadedPair) -> bool:
    """True when the loaded target and draft are the folders the chat was replied with."""
    if kept.target is None or Path(kept.target).resolve() != Path(loaded.target).resolve():
        return False
    if kept.draft is None or loaded.draft is None:
        return kept.draft is None and loaded.draft is None
    return Path(kept.draft).resolve() == Path(loaded.draft).resolve()


def pair_words(kept: ChatSettings) -> str:
    """'target + draft' (folder names), or 'target' for a chat replied without a draft."""
    names = Path(kept.target or "").name
    return names + (f" + {Path(kept.draft).name}" if kept.draft else "")


class PairNote(QFrame):
    """The note above the composer; loadRequested(target, draft) when the user asks for the chat's pair."""

    loadRequested = Signal(str, object)  # target folder, draft folder or None

    def __init__(self, chat: ChatController, loaded: Callable[[], LoadedPair | None], parent=None):
        super().__init__(parent)
        self.chat, self.loaded = chat, loaded
        self.kept = ChatSettings()
        self.setObjectName("pairNote")
        row = QHBoxLayout(self)
        row.setContentsMargins(4, 0, 4, 0)
        row.setSpacing(4)
        self.label = QLabel(objectName="footer")  # type: ignore[call-overload]
        self.label.setMinimumWidth(1)  # a long pair's names are clipped, never widen the chat column
        self.load_button = QToolButton(objectName="link")  # type: ignore[call-arg]
        self.load_button.setText("Load it")
        self.load_button.clicked.connect(self._load_pressed)
        row.addWidget(self.label)
        row.addWidget(self.load_button)
        row.addStretch(1)
        chat.conversationSwitched.connect(lambda _cid: self.refresh())
        chat.replyStarted.connect(lambda _id: self._replied())
        self.hide()

    def refresh(self) -> None:
        """Show the note when the open chat was replied with a pair other than the loaded one; hide it otherwise."""
        cid, pair = self.chat.conversation_id, self.loaded()
        self.kept = chat_settings(self.chat.store, cid) if cid is not None else ChatSettings()
        if self.kept.target is None or pair is None or pair.remote is not None or same_pair(self.kept, pair):
            self.hide()
            return
        missing = [folder for folder in (self.kept.target, self.kept.draft) if folder and not Path(folder).is_dir()]
        text = f"This chat used {pair_words(self.kept)}"
        if missing:
            text += f" · {Path(missing[0]).name} is no longer on disk"
        else:
            text += " ·"  # then "Load it"
        self.label.setText(text)
        self.label.setToolTip("\n".join(folder for folder in (self.kept.target, self.kept.draft) if folder))
        self.load_button.setVisible(not missing)
        self.load_button.setToolTip(f"Load {pair_words(self.kept)} (what is loaded now is replaced)")
        self.show()

    def _load_pressed(self) -> None:
        if self.kept.target is not None:
            self.loadRequested.emit(self.kept.target, self.kept.draft)

    def _replied(self) -> None:
        """A reply started in the open chat: it now used the loaded pair."""
        cid, pair = self.chat.conversation_id, self.loaded()
        if cid is not None and pair is not None and pair.remote is None:  # a server's pair is no folder to load
            try:
                set_chat_pair(self.chat.store, cid, pair.target, pair.draft)
            except (sqlite3.Error, KeyError) as error:  # the chat goes on; the controller says when the store refuses
                log.warning("could not keep the pair of conversation %s: %s", cid, error)
        self.refresh()
