"""What a reply is made of: its text, which characters came from accepted drafts, and
the rejected draft positions. Plain Python (no Qt) so it is easy to test."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from specchat.engine.events import PrefillProgress, RoundResult, TextChunk

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


@dataclass(frozen=True)
class RejectedSpot:
    """A reply position where the target refused the draft: what each proposed, as text."""

    position: int
    proposed: str
    chosen: str

    @property
    def tooltip(self) -> str:
        """The hover text for this position."""
        return f"Drafter proposed {self.proposed!r}; target chose {self.chosen!r}"


@dataclass(frozen=True)
class Parts:
    """A reply split into its thinking and its answer; offsets index the full text."""

    thinking: str | None
    thinking_start: int
    thinking_done: bool
    answer: str
    answer_start: int


def split_thinking(text: str) -> Parts:
    """Separate Qwen3's <think>...</think> block from the answer (open block = still thinking)."""
    stripped = len(text) - len(text.lstrip())
    if not text.lstrip().startswith(THINK_OPEN):
        return Parts(None, 0, False, text, 0)
    start = stripped + len(THINK_OPEN)
    end = text.find(THINK_CLOSE, start)
    if end < 0:
        return Parts(text[start:], start, False, "", len(text))
    answer_start = end + len(THINK_CLOSE)
    while answer_start < len(text) and text[answer_start] in "\r\n":
        answer_start += 1
    return Parts(text[start:end], start, True, text[answer_start:], answer_start)


class ReplyTrace:
    """Accumulates a streamed reply: text, per-character draft flags, token positions, rejections."""

    def __init__(self, decode: Callable[[list[int]], str]):
        self.decode = decode
        self.text = ""
        self.tokens: list[int] = []
        self.char_from_draft: list[bool] = []
        self.token_starts: list[int] = []  # char offset of each token's text
        self.rejections: list[RejectedSpot] = []
        self.prefill: PrefillProgress | None = None  # the latest prompt-reading progress
        self.waiting: str | None = None  # what the queued reply waits for, until its first event
        self.sent_at = time.monotonic()  # when Send was pressed: time to first token counts from here
        self.started_at: float | None = None  # its first engine event (it left the queue)
        self.first_text_at: float | None = None

    def timing(self) -> dict[str, float]:
        """Seconds from Send: to the first text (the reply's time to first token) and in the queue."""
        times = {}
        if self.first_text_at is not None:
            times["ttft_from_send_s"] = self.first_text_at - self.sent_at
        if self.started_at is not None:
            times["queued_s"] = self.started_at - self.sent_at
        return times

    def add(self, event) -> None:
        """Take one TextChunk, RoundResult or PrefillProgress (other events are ignored)."""
        now = time.monotonic()
        self.waiting = None
        self.started_at = self.started_at or now
        if isinstance(event, TextChunk) and event.text and self.first_text_at is None:
            self.first_text_at = now
        if isinstance(event, PrefillProgress):
            self.prefill = event
        elif isinstance(event, TextChunk):
            self._add_chunk(event)
        elif isinstance(event, RoundResult) and event.rejection is not None:
            r = event.rejection
            self.rejections.append(RejectedSpot(r.position, self.decode([r.proposed]), self.decode([r.chosen])))

    def rejection_chars(self) -> dict[int, RejectedSpot]:
        """Each char offset of a rejected position's (chosen) token -> the rejection. The whole token is
        marked (not only its first character, often a space) so its hover area is the word; leading
        whitespace is left out unless the token is nothing else."""
        spots = {}
        for spot in self.rejections:
            if spot.position < len(self.token_starts):
                start, end = self.token_span(spot.position)
                word = self.text[start:end]
                start += len(word) - len(word.lstrip()) if word.strip() else 0
                for offset in range(start, max(end, start + 1)):
                    spots[offset] = spot
        return spots

    def token_span(self, index: int) -> tuple[int, int]:
        """The [start, end) char offsets of token index's text."""
        start = self.token_starts[index]
        end = self.token_starts[index + 1] if index + 1 < len(self.token_starts) else len(self.text)
        return start, end

    def _add_chunk(self, chunk: TextChunk) -> None:
        start = len(self.text)
        lengths = self._piece_lengths(chunk)
        offset = start
        for token, length, flag in zip(chunk.token_ids, lengths, chunk.from_draft):
            self.tokens.append(token)
            self.token_starts.append(offset)
            self.char_from_draft.extend([flag] * length)
            offset += length
        self.text += chunk.text
        self.char_from_draft.extend([False] * (len(self.text) - len(self.char_from_draft)))

    def _piece_lengths(self, chunk: TextChunk) -> list[int]:
        """Share the chunk's characters among its tokens by their own decoded lengths."""
        n, total = len(chunk.token_ids), len(chunk.text)
        if n <= 1:
            return [total] * n
        lengths, left = [], total
        for token in chunk.token_ids:
            length = min(len(self.decode([token])), left)
            lengths.append(length)
            left -= length
        lengths[-1] += left
        return lengths


def trace_data(trace: ReplyTrace) -> dict:
    """What the store keeps of a trace: draft flags as alternating run lengths (not-drafted first) and each
    rejection as [char offset, token position, proposed, chosen]."""
    runs, current, length = [], False, 0
    for flag in trace.char_from_draft:
        if flag != current:
            runs.append(length)
            current, length = flag, 0
        length += 1
    runs.append(length)
    spots = [[offset, spot.position, spot.proposed, spot.chosen] for offset, spot in trace.rejection_chars().items()]
    return {"flags": runs, "rejections": spots}


class SavedTrace:
    """A finished reply's trace read back from the store: enough for its card to tint it again."""

    prefill = None

    def __init__(self, text: str, data: dict):
        self.text = text
        self.char_from_draft: list[bool] = []
        for i, length in enumerate(data.get("flags", [])):
            self.char_from_draft.extend([i % 2 == 1] * int(length))
        self._spots = {
            int(offset): RejectedSpot(int(position), str(proposed), str(chosen))
            for offset, position, proposed, chosen in data.get("rejections", [])
        }

    def rejection_chars(self) -> dict[int, RejectedSpot]:
        """Char offset of each rejected position -> the rejection."""
        return dict(self._spots)


def saved_trace(text: str, data: dict | None) -> SavedTrace | None:
    """The card's trace for a stored reply, or None when it was saved without one."""
    return SavedTrace(text, data) if data else None


def align(source: str, rendered: str) -> list[int | None]:
    """For each rendered character, the source index it shows (None for inserted characters).

    Markdown rendering drops markup but keeps the words in order, so a greedy walk that
    matches each rendered character to the next equal source character lines them up.
    Whitespace of any kind (newline, paragraph separator, tab) matches any whitespace.
    """
    mapping: list[int | None] = []
    j = 0
    for ch in rendered:
        k = _find_next(source, ch, j)
        if k is None:
            mapping.append(None)
            continue
        mapping.append(k)
        j = k + 1
    return mapping


_LOOKAHEAD = 64  # markup between two shown characters is short (`**`, "```python\n", ...)


def _find_next(source: str, ch: str, start: int) -> int | None:
    space = ch.isspace() or ch in "\u2029\u2028"
    for k in range(start, min(len(source), start + _LOOKAHEAD)):
        if source[k] == ch or (space and source[k].isspace()):
            return k
    return None
