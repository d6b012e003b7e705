"""A conversation as a Markdown document or a JSON file, for sharing or archiving. No Qt."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from .records import Conversation, StoredMessage

EXPORT_FORMAT = "specchat-conversation"
EXPORT_VERSION = 1
ROLE_TITLES = {"user": "You", "assistant": "Assistant"}


def to_markdown(conversation: Conversation, messages: list[StoredMessage]) -> str:
    """A readable document: title, system prompt, then each message under its role, with its figures."""
    lines = [f"# {conversation.title}", "", f"_Exported from SpecChat, {_iso(conversation.updated_at)}_", ""]
    if conversation.system_prompt:
        lines += ["## System prompt", "", conversation.system_prompt, ""]
    for message in messages:
        content = close_open_fence(message.content)
        lines += [f"## {ROLE_TITLES.get(message.role, message.role)}", "", content, ""]
        figures = _figures(message)
        if figures:
            lines += [f"_{figures}_", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def to_json(conversation: Conversation, messages: list[StoredMessage]) -> str:
    """Everything saved about the conversation, messages with their stats, as indented JSON."""
    document = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "title": conversation.title,
        "system_prompt": conversation.system_prompt,
        "created_at": _iso(conversation.created_at),
        "updated_at": _iso(conversation.updated_at),
        "messages": [
            {
                "role": m.role,
                "content": m.content,
                "created_at": _iso(m.created_at),
                "stopped": m.cancelled,
                "stats": m.stats,
            }
            for m in messages
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def close_open_fence(text: str) -> str:
    """The text with a closing fence added when it ends inside a fenced code block.

    A reply cut off (stopped, or out of tokens) inside a code block would otherwise turn every later
    section of the document into code. Fences follow CommonMark: a block opened by N backticks (or
    tildes) is closed by a line of at least N of the same character and nothing else.
    """
    open_fence = ""
    for line in text.splitlines():
        match = _FENCE.match(line)
        if not match:
            continue
        fence, rest = match.group(1), match.group(2)
        if not open_fence:
            if fence[0] == "`" and "`" in rest:
                continue  # not a fence: an info string may not hold a backtick
            open_fence = fence
        elif fence[0] == open_fence[0] and len(fence) >= len(open_fence) and not rest.strip():
            open_fence = ""
    if not open_fence:
        return text
    return text.rstrip("\n") + "\n" + open_fence


def _figures(message: StoredMessage) -> str:
    stats = message.stats or {}
    if message.role != "assistant" or not stats:
        return "stopped" if message.cancelled else ""
    parts = [f"{stats.get('generated_tokens', 0)} tokens", f"{stats.get('decode_tokens_per_s', 0.0):.1f} tok/s"]
    mode = stats.get("mode")
    if mode and mode != "baseline":
        parts.append(f"speculation: {mode}")
    if message.cancelled:
        parts.append("stopped")
    return " · ".join(parts)


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")
