"""Continue a reply that stopped at Max tokens: whether a reply may be continued (and why not), the reply's
trace grown in place, and its text and stats once the continuation ends. Plain Python (no Qt)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from specchat.engine.engine import whole_characters
from specchat.engine.events import Rejection, RoundResult, TextChunk
from specchat.engine.summary import CONTEXT_FULL, stop_text
from specchat.store import StoredMessage
from specchat.store.records import TRACE_TOKENS

from .trace import ReplyTrace, SavedTrace, trace_data

CONTINUE_SHORTCUT = "Ctrl+Shift+R"
CONTINUE_TIP = (
    f"Write more of this reply, up to Max tokens more, as if its budget had been larger ({CONTINUE_SHORTCUT})"
)
BUSY = "A reply is being written: continue once it has finished"
NOT_LAST = "Only the last reply can be continued: later messages were written after this one"
INTERRUPTED = "This reply was interrupted (SpecChat closed while it was written): regenerate it instead"
NO_TOKENS = (
    "This reply was saved without its token ids (by an earlier SpecChat), so it cannot be continued exactly: "
    "regenerate it instead"
)
ENDED = {  # why a reply that did not stop at Max tokens is not continued, by its stop reason
    "eos": "This reply ended by itself (end of turn): there is nothing to continue",
    "cancelled": "You stopped this reply: only a reply cut off at Max tokens can be continued",
    "error": "This reply ended with an error: regenerate it instead",
    "interrupted": INTERRUPTED,
}
CONTEXT_WAS_FULL = (
    "This reply stopped because the context was full: there is no room to continue it. Raise the context "
    "length in Preferences and regenerate it, or start a new chat"
)
NO_REPLY = "There is no reply to continue: only a reply cut off at Max tokens can be continued"
EDITED = (
    "This reply was edited by hand, so the tokens it was written with no longer match its text: "
    "it cannot be continued exactly. Send a new message, or regenerate it"
)


class ContinueLink(Protocol):
    """What a reply card offers for Continue (MessageView)."""

    role: str
    message_id: int | None

    @property
    def continue_button(self) -> Any: ...


def why_not_continued(message: StoredMessage | None, last: bool, busy: bool) -> str | None:
    """Why this reply cannot be continued now; None when it can (the last reply, cut off at Max tokens)."""
    if message is None or message.role != "assistant":
        return NO_REPLY
    if busy:
        return BUSY
    if not last:
        return NOT_LAST
    if not message.complete:
        return INTERRUPTED
    if message.edited_by_hand:
        return EDITED
    reason = str((message.stats or {}).get("stop_reason") or "")
    if reason == "length" and message.cancelled:  # stopped by the user at its very last token
        reason = "cancelled"
    if reason != "length":
        return ENDED.get(reason or ("cancelled" if message.cancelled else ""), NO_REPLY)
    if stop_text(message.stats) == CONTEXT_FULL:
        return CONTEXT_WAS_FULL
    if message.token_ids is None:
        return NO_TOKENS
    return None


def cut_by_length(message: StoredMessage) -> bool:
    """True for a finished reply that stopped at Max tokens (and was not rewritten by hand since)."""
    stats = message.stats or {}
    cut = stats.get("stop_reason") == "length" and not message.cancelled
    return message.role == "assistant" and cut and not message.edited_by_hand


def show_continue(views: Iterable[ContinueLink], messages: Sequence[StoredMessage], busy: bool) -> None:
    """Offer Continue on the reply cards: the last reply (greyed with the reason unless it can be continued)
    and earlier replies cut off at Max tokens (greyed: only the last one can be)."""
    by_id = {m.id: m for m in messages}
    last_id = messages[-1].id if messages else None
    for view in views:
        message = by_id.get(view.message_id) if view.message_id is not None else None
        button = view.continue_button
        last = message is not None and message.id == last_id
        shown = view.role == "assistant" and message is not None and ((last and not busy) or cut_by_length(message))
        button.setVisible(shown)
        if shown:
            why = why_not_continued(message, last, busy)
            button.setEnabled(why is None)
            button.setToolTip(why or CONTINUE_TIP)


def continued_message(message: StoredMessage, token_ids: list[int]) -> dict[str, Any]:
    """The reply as the last chat message, carrying its own token ids so its prompt is continued exactly."""
    return {"role": "assistant", "content": message.content, "token_ids": list(token_ids)}


class ContinuedTrace(ReplyTrace):
    """A continued reply's trace: the saved reply's text, tints, rejection marks and tokens, then what streams."""

    def __init__(self, decode: Callable[[list[int]], str], reply: StoredMessage, token_ids: list[int]):
        super().__init__(decode)
        saved = SavedTrace(reply.content, reply.trace or {})
        self.text = reply.content
        self.tokens = list(token_ids)
        flags = saved.char_from_draft[: len(reply.content)]
        self.char_from_draft = flags + [False] * (len(reply.content) - len(flags))
        self.token_starts = _token_starts(decode, token_ids, len(reply.content))
        self._saved_spots = saved.rejection_chars()
        self._before = len(token_ids)
        self._joined = False  # the continuation's first text was joined to the saved text

    def add(self, event) -> None:
        """As ReplyTrace.add; a rejection's position counts the tokens of the reply before the continuation."""
        if isinstance(event, RoundResult) and event.rejection is not None:
            rejection = event.rejection
            shifted = Rejection(rejection.position + self._before, rejection.proposed, rejection.chosen)
            event = replace(event, rejection=shifted)
        super().add(event)

    def rejection_chars(self):
        """The saved reply's marks and the continuation's."""
        return self._saved_spots | super().rejection_chars()

    def _add_chunk(self, chunk: TextChunk) -> None:
        # The engine's detokenizer starts afresh at the continuation: it drops the first token's leading space
        # and cannot complete a character the saved reply cut. Its first text is taken from the decoding of
        # every token so far instead; what follows it streams on unchanged.
        if chunk.text and not self._joined:
            self._joined = True
            whole = whole_characters(self.decode(self.tokens + list(chunk.token_ids)))
            if whole.startswith(self.text):
                chunk = replace(chunk, text=whole[len(self.text) :])
        super()._add_chunk(chunk)

    def settle(self, text: str) -> None:
        """End on the reply's exact text (continued_text), should what streamed differ from it."""
        if text != self.text:
            self.text = text
            self.char_from_draft = (self.char_from_draft + [False] * len(text))[: len(text)]


def _token_starts(decode: Callable[[list[int]], str], token_ids: list[int], length: int) -> list[int]:
    """Each token's char offset in the saved text, from the tokens' own decoded lengths (capped at its end)."""
    starts, offset = [], 0
    for token in token_ids:
        starts.append(min(offset, length))
        offset += len(decode([token]))
    return starts


def reply_trace_data(trace: ReplyTrace) -> dict:
    """What the store keeps of a reply's trace: its tints and marks (trace_data) and its token ids."""
    return trace_data(trace) | {TRACE_TOKENS: list(trace.tokens)}


def continued_text(decode: Callable[[list[int]], str], before: str, token_ids: list[int], streamed: str) -> str:
    """The continued reply's whole text: the decoding of all its tokens (a character cut at the first part's end
    is whole again), or the saved text and what streamed when the decoding does not begin with the saved text."""
    whole = whole_characters(decode(token_ids))
    return whole if whole.startswith(before) and len(whole) >= len(before) else before + streamed


def continued_stats(before: dict | None, after: dict | None) -> dict | None:
    """The continued reply's stats: the continuation's, with the reply's whole token count and budget."""
    if after is None or "generated_tokens" not in after:
        return after
    earlier = before or {}
    generated = int(earlier.get("generated_tokens", 0)) + int(after["generated_tokens"])
    budget = int(earlier.get("max_tokens", earlier.get("generated_tokens", 0))) + int(after.get("max_tokens", 0))
    return {**after, "generated_tokens": generated, "max_tokens": budget}
