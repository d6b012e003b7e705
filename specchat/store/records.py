"""What the store hands out (a conversation, a message) and how a row and its JSON become one. No Qt."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from .versions import EDITED_BY_HAND

DEFAULT_TITLE = "New chat"
ROLES = ("user", "assistant")
TRACE_TOKENS = "tokens"  # the key of a reply's token ids in its trace


@dataclass(frozen=True)
class Conversation:
    """One saved chat: its title, system prompt, times (seconds since the epoch) and its own reply length
    (max_tokens; None: the default from Preferences)."""

    id: int
    title: str
    system_prompt: str
    created_at: float
    updated_at: float
    max_tokens: int | None = None


@dataclass(frozen=True)
class StoredMessage:
    """One message; stats is the generation's figures for replies; complete is False while (or if) a reply streams;
    trace is a reply's draft tints, rejection marks and token ids (JSON-ready dict); version is the shown
    version's number."""

    id: int
    conversation_id: int
    position: int
    role: str
    content: str
    stats: dict[str, Any] | None = None
    cancelled: bool = False
    created_at: float = field(default=0.0, compare=False)
    complete: bool = True
    trace: dict[str, Any] | None = field(default=None, compare=False)
    version: int = 0

    def as_chat(self) -> dict[str, str]:
        """The {"role", "content"} dict a chat template takes."""
        return {"role": self.role, "content": self.content}

    @property
    def edited_by_hand(self) -> bool:
        """True for a reply whose text the user changed after it was generated (edit_reply)."""
        return bool((self.stats or {}).get(EDITED_BY_HAND))

    @property
    def token_ids(self) -> list[int] | None:
        """A reply's token ids as generated (kept in its trace); None when it was saved without them."""
        ids = (self.trace or {}).get(TRACE_TOKENS)
        if not isinstance(ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
            return None
        return ids


def title_from(text: str, limit: int = 48) -> str:
    """A conversation title from the first user message: first line, shortened."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "") or DEFAULT_TITLE
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _message(row: sqlite3.Row) -> StoredMessage:
    data = dict(row)
    data["stats"] = json.loads(data["stats"]) if data["stats"] else None
    data["trace"] = json.loads(data["trace"]) if data.get("trace") else None
    data["cancelled"] = bool(data["cancelled"])
    data["complete"] = bool(data["complete"])
    return StoredMessage(**data)


def _to_json(stats: dict[str, Any] | None) -> str | None:
    return json.dumps(stats) if stats is not None else None


def _inserted_id(cur: sqlite3.Cursor) -> int:
    """The rowid an INSERT just made (sqlite3 types lastrowid as optional: None only before any INSERT)."""
    if cur.lastrowid is None:
        raise sqlite3.OperationalError("the INSERT made no row")
    return cur.lastrowid
