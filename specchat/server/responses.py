"""OpenAI response bodies (whole and streamed chunks) and stop sequences over streamed text."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence

from specchat.engine.events import GenerationStats
from specchat.engine.json_types import JSONObject
from specchat.engine.modes import StopReason

from .tools import Piece, ToolCall, ToolCallParser


class StopMatcher:
    """Cuts streamed text at the first stop sequence; holds back a tail that may start one."""

    def __init__(self, stops: tuple[str, ...]):
        self.stops = stops
        self.pending = ""
        self.stopped = False

    def feed(self, text: str) -> str:
        """Text that is safe to send now; after a stop sequence, nothing more."""
        if self.stopped:
            return ""
        self.pending += text
        cut = min((i for i in (self.pending.find(s) for s in self.stops) if i >= 0), default=-1)
        if cut >= 0:
            self.stopped = True
            out, self.pending = self.pending[:cut], ""
            return out
        hold = max((n for s in self.stops for n in range(1, len(s)) if self.pending.endswith(s[:n])), default=0)
        out = self.pending[: len(self.pending) - hold]
        self.pending = self.pending[len(out) :]
        return out

    def flush(self) -> str:
        """The held-back tail once generation ended without a stop sequence."""
        out, self.pending = ("" if self.stopped else self.pending), ""
        return out


def finish_reason(
    stats: GenerationStats | None, stopped_by_sequence: bool, called_tools: bool = False, cut_call: bool = False
) -> str:
    """'length' (max tokens, also when it cut a tool call), 'tool_calls' (the reply made calls) or 'stop' (end of
    turn or a stop sequence)."""
    if cut_call:
        return "length"
    if called_tools:
        return "tool_calls"
    if stopped_by_sequence or stats is None:
        return "stop"
    return "length" if stats.stop_reason == StopReason.LENGTH else "stop"


def usage(prompt_tokens: int, stats: GenerationStats | None, completion_tokens: int | None = None) -> JSONObject:
    """OpenAI's usage fields plus what speculation did for this request."""
    completion = completion_tokens if completion_tokens is not None else (stats.generated_tokens if stats else 0)
    body: JSONObject = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": prompt_tokens + completion,
    }
    if stats is not None:
        drafted = stats.drafted
        body["speculation"] = {
            "mode": stats.mode,
            "num_draft_tokens": "auto" if stats.auto_k else stats.num_draft_tokens,
            "drafted": drafted,
            "accepted": stats.accepted,
            "acceptance_rate": stats.accepted / drafted if drafted else None,
            "decode_tokens_per_s": stats.decode_tokens_per_s,
            "ttft_s": stats.ttft_s,
            "cached_prompt_tokens": stats.cached_prompt_tokens,
            # the requests decoded together while this one ran in a batch (0: it ran alone)
            "batch_rows_max": stats.batch_rows_max,
            "batch_rows_mean": stats.batch_rows_mean,
            # how deep its rounds drafted, and the tokens decoded plainly (K = 0: speculation did not pay,
            # as in a batch too large for drafts to pay on this machine)
            "mean_k": stats.mean_k,
            "plain_tokens": stats.plain_tokens,
        }
    return body


class ResponseShape:
    """Builds one request's bodies: the same id, creation time and model in every chunk."""

    def __init__(self, kind: str, model: str):
        self.kind, self.model = kind, model
        self.id = ("chatcmpl-" if kind == "chat" else "cmpl-") + uuid.uuid4().hex[:24]
        self.created = int(time.time())

    def whole(
        self,
        text: str,
        reason: str,
        usage_body: JSONObject,
        tool_calls: Sequence[ToolCall] = (),
        logprobs: JSONObject | None = None,
    ) -> JSONObject:
        """The non-streamed response; with tool calls, the content is null when no text is left around them."""
        choice: JSONObject
        if self.kind == "chat":
            message: JSONObject = {"role": "assistant", "content": text if text or not tool_calls else None}
            if tool_calls:
                message["tool_calls"] = [call.message_entry() for call in tool_calls]
            choice = {"index": 0, "message": message, "finish_reason": reason, "logprobs": logprobs}
        else:
            choice = {"index": 0, "text": text, "finish_reason": reason, "logprobs": logprobs}
        return self._envelope(
            "chat.completion" if self.kind == "chat" else "text_completion", [choice], usage=usage_body
        )

    def chunk(
        self,
        text: str | None = None,
        reason: str | None = None,
        first: bool = False,
        tool_call: JSONObject | None = None,
    ) -> JSONObject:
        """One streamed chunk: new text, a tool-call delta, or the final one carrying finish_reason."""
        if self.kind == "chat":
            delta: JSONObject = {"role": "assistant"} if first else {}
            if text is not None:
                delta["content"] = text
            if tool_call is not None:
                delta["tool_calls"] = [tool_call]
            choice: JSONObject = {"index": 0, "delta": delta, "finish_reason": reason, "logprobs": None}
            return self._envelope("chat.completion.chunk", [choice])
        choice = {"index": 0, "text": text or "", "finish_reason": reason, "logprobs": None}
        return self._envelope("text_completion", [choice])

    def usage_chunk(self, usage_body: JSONObject) -> JSONObject:
        """The last chunk when stream_options.include_usage is set: no choices, the usage."""
        kind = "chat.completion.chunk" if self.kind == "chat" else "text_completion"
        return self._envelope(kind, [], usage=usage_body)

    def _envelope(self, obj: str, choices: list[JSONObject], usage: JSONObject | None = None) -> JSONObject:
        body: JSONObject = {
            "id": self.id,
            "object": obj,
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }
        if usage is not None:
            body["usage"] = usage
        return body


class StreamedChoice:
    """The chunks of one streamed choice: the role with the first, then text, or tool-call deltas when parsed."""

    def __init__(self, shape: ResponseShape, parser: ToolCallParser | None = None):
        self.shape, self.parser = shape, parser
        self.first = True

    @property
    def called_tools(self) -> bool:
        """Whether the reply so far made tool calls."""
        return self.parser is not None and bool(self.parser.calls)

    def feed(self, text: str) -> list[JSONObject]:
        """The chunks for more text (the first call sends the role chunk even with no text yet)."""
        pieces: list[Piece] = self.parser.feed(text) if self.parser else [text] if text else []
        return self._chunks(pieces)

    def finish(self, cut: bool = False) -> list[JSONObject]:
        """The chunks for what the parser held back to the end (cut: max_tokens ended the reply)."""
        return self._chunks(self.parser.finish(cut) if self.parser else [])

    def _chunks(self, pieces: list[Piece]) -> list[JSONObject]:
        out: list[JSONObject] = []
        if self.first and self.shape.kind == "chat":  # OpenAI's first chunk: the role alone, no text
            out.append(self.shape.chunk("", first=True))
        self.first = False
        for piece in pieces:
            if isinstance(piece, str):
                out.append(self.shape.chunk(piece))
                continue
            for delta in piece.deltas():
                out.append(self.shape.chunk(None, tool_call=delta))
        return out
