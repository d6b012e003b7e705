"""Saved conversations (SQLite); no Qt."""

from .conversations import ConversationStore
from .records import Conversation, StoredMessage
from .recovery import OpenReport, open_store

__all__ = ["Conversation", "ConversationStore", "OpenReport", "StoredMessage", "open_store"]
