"""Anthropic's streamed events from the OpenAI chat chunks the server makes: message_start, a content block
per text run and per tool call with their deltas, message_delta with the stop reason, message_stop."""

from __future__ import annotations

import json
import uuid

from specchat.engine.json_types import JSONObject, as_int, as_object, as_str, objects

from .anthropic_wire import stop_reason, tool_use_id
from .responses import StopMatcher


class NamedStop(StopMatcher):
    """A StopMatcher that also tells which stop sequence ended the text."""

    def __init__(self, stops: tuple[str, ...]):
        super().__init__(stops)
        self.matched: str | None = None

    def feed(self, text: str) -> str:
        """StopMatcher.feed, remembering the earliest sequence found."""
        seen = self.pending + text
        out = super().feed(text)
        if self.stopped and self.matched is None:
            found = [(seen.find(s), s) for s in self.stops if seen.find(s) >= 0]
            self.matched = min(found)[1] if found else None
        return out


class AnthropicEvents:
    """Turns OpenAI chat chunks (dicts) into Anthropic (event, data) pairs, in order."""

    def __init__(self, model: str, input_tokens: int, stops: tuple[str, ...] = ()):
        self.model, self.input_tokens = model, input_tokens
        self.stops = NamedStop(stops)
        self.block = -1  # index of the open content block (-1: none)
        self.open_kind: str | None = None  # "text" or "tool_use"
        self.tool_blocks: dict[int, int] = {}  # OpenAI tool-call index -> content block index
        self.output_tokens = 0
        self.reason: str | None = None

    def start(self) -> list[tuple[str, JSONObject]]:
        """The message_start event."""
        message: JSONObject = {
            "id": "msg_" + uuid.uuid4().hex[:24],
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": 0},
        }
        return [("message_start", {"type": "message_start", "message": message})]

    def chunk(self, chunk: JSONObject) -> list[tuple[str, JSONObject]]:
        """The events one OpenAI chunk makes (none once a stop sequence ended the text)."""
        if chunk.get("usage"):
            self.output_tokens = as_int(as_object(chunk["usage"]).get("completion_tokens"), self.output_tokens)
        out: list[tuple[str, JSONObject]] = []
        for choice in objects(chunk.get("choices")):
            delta = as_object(choice.get("delta"))
            content = as_str(delta.get("content"))
            if content and not self.stops.stopped:
                out += self._text(self.stops.feed(content))
            for call in objects(delta.get("tool_calls")):
                out += self._tool(call)
            if choice.get("finish_reason"):
                self.reason = as_str(choice["finish_reason"])
        return out

    @property
    def stopped(self) -> bool:
        """A stop sequence ended the text: the rest of the generation is not wanted."""
        return self.stops.stopped

    def finish(self) -> list[tuple[str, JSONObject]]:
        """The held-back text, the last block's stop, message_delta and message_stop."""
        out = self._text(self.stops.flush())
        out += self._close()
        delta: JSONObject = {
            "stop_reason": stop_reason(self.reason, self.stops.matched),
            "stop_sequence": self.stops.matched,
        }
        out.append(
            ("message_delta", {"type": "message_delta", "delta": delta, "usage": {"output_tokens": self.output_tokens}})
        )
        out.append(("message_stop", {"type": "message_stop"}))
        return out

    def _text(self, text: str) -> list[tuple[str, JSONObject]]:
        if not text:
            return []
        out = self._open("text", {"type": "text", "text": ""}) if self.open_kind != "text" else []
        out.append(("content_block_delta", self._delta({"type": "text_delta", "text": text})))
        return out

    def _tool(self, call: JSONObject) -> list[tuple[str, JSONObject]]:
        out: list[tuple[str, JSONObject]] = []
        index = as_int(call.get("index"))
        function = as_object(call.get("function"))
        if index not in self.tool_blocks:
            block: JSONObject = {
                "type": "tool_use",
                "id": tool_use_id(call.get("id")),
                "name": as_str(function.get("name")),
                "input": {},
            }
            out += self._open("tool_use", block)
            self.tool_blocks[index] = self.block
        arguments = as_str(function.get("arguments"))
        if arguments:
            out.append(("content_block_delta", self._delta({"type": "input_json_delta", "partial_json": arguments})))
        return out

    def _open(self, kind: str, block: JSONObject) -> list[tuple[str, JSONObject]]:
        out = self._close()
        self.block += 1
        self.open_kind = kind
        out.append(
            ("content_block_start", {"type": "content_block_start", "index": self.block, "content_block": block})
        )
        return out

    def _close(self) -> list[tuple[str, JSONObject]]:
        if self.open_kind is None:
            return []
        self.open_kind = None
        return [("content_block_stop", {"type": "content_block_stop", "index": self.block})]

    def _delta(self, delta: JSONObject) -> JSONObject:
        return {"type": "content_block_delta", "index": self.block, "delta": delta}


def sse(event: str, data: JSONObject) -> dict[str, str]:
    """One server-sent event as sse-starlette takes it."""
    return {"event": event, "data": json.dumps(data)}
