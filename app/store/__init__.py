"""Saved conversations (SQLite); no Qt."""

from .conversations import Conversation, ConversationStore, StoredMessage

__all__ = ["Conversation", "ConversationStore", "StoredMessage"]
