"""Saved conversations (SQLite); no Qt."""

from .conversations import Conversation, ConversationStore, StoredMessage
from .recovery import OpenReport, open_store

__all__ = ["Conversation", "ConversationStore", "OpenReport", "StoredMessage", "open_store"]
