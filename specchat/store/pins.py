"""Pinned chats: kept at the top of the sidebar across restarts (table `pinned`, schema 6). These run SQL on the
ConversationStore's own connection; no Qt."""

from __future__ import annotations

import time

from .conversations import ConversationStore


def pinned_ids(store: ConversationStore) -> set[int]:
    """The ids of the pinned conversations."""
    return {row[0] for row in store._db.execute("SELECT conversation_id FROM pinned")}


def is_pinned(store: ConversationStore, conversation_id: int) -> bool:
    """True when the conversation is pinned."""
    row = store._db.execute("SELECT 1 FROM pinned WHERE conversation_id = ?", (conversation_id,)).fetchone()
    return row is not None


def set_pinned(store: ConversationStore, conversation_id: int, pinned: bool) -> None:
    """Pin or unpin a conversation (KeyError when there is none with this id); pinning twice keeps the first time."""
    store.get(conversation_id)
    with store._transaction() as db:
        if pinned:
            db.execute(
                "INSERT OR IGNORE INTO pinned (conversation_id, pinned_at) VALUES (?, ?)",
                (conversation_id, time.time()),
            )
        else:
            db.execute("DELETE FROM pinned WHERE conversation_id = ?", (conversation_id,))
