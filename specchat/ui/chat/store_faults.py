"""When the conversations file refuses a write: a sent message is kept in the box and sent again until the file
takes it, a full disk moves the session to an in-memory copy, and a reply that could not be saved is said once."""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer

from specchat.store import ConversationStore
from specchat.store.errors import NewerDatabaseError, is_locked

if TYPE_CHECKING:
    from .controller import ChatController

RETRY_MS = 2000  # a message the conversations file refused is sent again this often

log = logging.getLogger(__name__)


class StoreFaults:
    """The chat's answers to a conversations file that refuses a write (locked, full, damaged)."""

    def __init__(self, chat: ChatController):
        self.chat = chat
        self.unsaved: str | None = None  # a sent message waiting for the conversations file
        self._reply_said = False  # the store's refusal was said for the reply in progress

    def go_on_in_memory(self, error: sqlite3.Error) -> bool:
        """The disk is full: carry on with an in-memory copy of the conversations (said once); False when even
        that copy could not be made."""
        chat = self.chat
        try:
            memory = ConversationStore.snapshot(chat.store.path)
        except (sqlite3.Error, NewerDatabaseError):
            log.exception("could not copy %s into memory after a full disk", chat.store.path)
            return False
        old, chat.store = chat.store, memory
        chat.sidebar.store = memory
        old.close()
        chat.storeReplaced.emit(memory)
        chat.storeFailed.emit(
            f"Could not save to {old.path} ({error}): the chat goes on in memory and nothing "
            "more is saved this session. Free some space and restart SpecChat to save again."
        )
        return True

    def retry_send(self, text: str, error: sqlite3.OperationalError) -> None:
        """Say (once) that the message could not be saved; send it again every retry_ms while it waits in the box."""
        chat = self.chat
        if self.unsaved is None:
            chat.storeFailed.emit(
                f"Could not save your message to {chat.store.path} ({error})"
                + (": another program is using it. " if is_locked(error) else ". ")
                + "The message is kept in the box and goes out as soon as the file can be written."
            )
        self.unsaved = text
        QTimer.singleShot(chat.retry_ms, chat, lambda: self._send_again(text))  # dies with the controller

    def _send_again(self, text: str) -> None:
        """The retry: only while the same message still waits in the box."""
        chat = self.chat
        if self.unsaved == text and chat.composer.message() == text and not chat.busy:
            chat.send(text)

    def message_saved(self) -> None:
        """A sent message reached the file: a refusal said before is over."""
        if self.unsaved is not None:
            self.unsaved = None
            self.chat.storeRecovered.emit()

    def reset_reply_notice(self) -> None:
        """A reply is being saved as it ends: a refusal from here on is said (again)."""
        self._reply_said = False

    def reply_not_saved(self, error: sqlite3.DatabaseError) -> None:
        """Say once per reply that the conversations file refused a write."""
        if not self._reply_said:
            self._reply_said = True
            self.chat.storeFailed.emit(
                f"Could not save to {self.chat.store.path} ({error}): the chat goes on, but this "
                "reply is not kept. Free some space and the next one will be."
            )
