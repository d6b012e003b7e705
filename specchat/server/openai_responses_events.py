"""The Responses API's streamed events from the OpenAI chat chunks the server makes: response.created and
.in_progress, an output item per text run (a message with one output_text part) and per tool call (a
function_call), their deltas and done events, then response.completed (or .incomplete at max_output_tokens).
The whole response is the one the last event carries."""

from __future__ import annotations

import copy
import time
import uuid
from typing import Any


def new_id(prefix: str) -> str:
    """An OpenAI-style id: the prefix, an underscore, 24 hex digits."""
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


class ResponsesEvents:
    """Turns OpenAI chat chunks (dicts) into Responses events (dicts with type and sequence_number), in order."""

    def __init__(self, model: str, echo: dict[str, Any], single_call: bool = False):
        self.response: dict[str, Any] = {
            "id": new_id("resp"),
            "object": "response",
            "created_at": int(time.time()),
            "status": "in_progress",
            "model": model,
            "output": [],
            "error": None,
            "incomplete_details": None,
            "usage": None,
            **echo,
        }
        self.single_call = single_call  # parallel_tool_calls false: the first call only
        self.sequence = 0
        self.open: int | None = None  # the output index of the item still open
        self.calls: dict[int, int] = {}  # chat tool-call index -> output index
        self.reason: str | None = None

    @property
    def output(self) -> list[dict[str, Any]]:
        """The output items so far."""
        items: list[dict[str, Any]] = self.response["output"]
        return items

    def start(self) -> list[dict[str, Any]]:
        """response.created and response.in_progress."""
        return [
            self._event("response.created", response=self._snapshot()),
            self._event("response.in_progress", response=self._snapshot()),
        ]

    def chunk(self, chunk: dict[str, Any]) -> list[dict[str, Any]]:
        """The events one chat chunk makes."""
        if chunk.get("usage"):
            self.response["usage"] = usage(chunk["usage"])
        out: list[dict[str, Any]] = []
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                out += self._text(delta["content"])
            for call in delta.get("tool_calls") or []:
                out += self._call(call)
            if choice.get("finish_reason"):
                self.reason = choice["finish_reason"]
        return out

    def finish(self) -> list[dict[str, Any]]:
        """The open item's done events and response.completed, or response.incomplete at the token limit."""
        incomplete = self.reason == "length"
        out = self._close("incomplete" if incomplete else "completed")
        self.response["status"] = "incomplete" if incomplete else "completed"
        if incomplete:
            self.response["incomplete_details"] = {"reason": "max_output_tokens"}
        kind = "response.incomplete" if incomplete else "response.completed"
        return [*out, self._event(kind, response=self._snapshot())]

    def error(self, error: dict[str, Any]) -> dict[str, Any]:
        """The error event for an OpenAI error object that ended the generation."""
        fields = {k: error.get(k) for k in ("code", "message", "param")}
        return self._event("error", **fields)

    def _text(self, text: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.open is None or self.output[self.open]["type"] != "message":
            out += self._close("completed")
            part: dict[str, Any] = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            item = {"id": new_id("msg"), "type": "message", "status": "in_progress", "role": "assistant", "content": []}
            out.append(self._added(item))
            self.output[-1]["content"].append(part)
            out.append(self._part("response.content_part.added", part))
        self.output[-1]["content"][0]["text"] += text
        out.append(self._on_item("response.output_text.delta", content_index=0, delta=text, logprobs=[]))
        return out

    def _call(self, call: dict[str, Any]) -> list[dict[str, Any]]:
        index = call.get("index", 0)
        if self.single_call and index > 0:
            return []
        function = call.get("function") or {}
        out: list[dict[str, Any]] = []
        if index not in self.calls:
            out += self._close("completed")
            item = {
                "id": new_id("fc"),
                "type": "function_call",
                "status": "in_progress",
                "call_id": call.get("id") or new_id("call"),
                "name": function.get("name", ""),
                "arguments": "",
            }
            out.append(self._added(item))
            self.calls[index] = len(self.output) - 1
        if function.get("arguments"):
            self.output[self.calls[index]]["arguments"] += function["arguments"]
            out.append(self._on_item("response.function_call_arguments.delta", delta=function["arguments"]))
        return out

    def _added(self, item: dict[str, Any]) -> dict[str, Any]:
        self.output.append(item)
        self.open = len(self.output) - 1
        return self._event("response.output_item.added", output_index=self.open, item=copy.deepcopy(item))

    def _close(self, status: str) -> list[dict[str, Any]]:
        """The done events of the open item, which ends with `status`."""
        if self.open is None:
            return []
        item = self.output[self.open]
        out: list[dict[str, Any]] = []
        if item["type"] == "message":
            part = item["content"][0]
            out.append(self._on_item("response.output_text.done", content_index=0, text=part["text"], logprobs=[]))
            out.append(self._part("response.content_part.done", part))
        else:
            out.append(
                self._on_item("response.function_call_arguments.done", arguments=item["arguments"], name=item["name"])
            )
        item["status"] = status if item["type"] == "message" else "completed"
        out.append(self._event("response.output_item.done", output_index=self.open, item=copy.deepcopy(item)))
        self.open = None
        return out

    def _part(self, kind: str, part: dict[str, Any]) -> dict[str, Any]:
        return self._on_item(kind, content_index=0, part=copy.deepcopy(part))

    def _on_item(self, kind: str, **fields: Any) -> dict[str, Any]:
        """An event about the open item: its id and output index, and `fields`."""
        assert self.open is not None
        return self._event(kind, item_id=self.output[self.open]["id"], output_index=self.open, **fields)

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return event

    def _snapshot(self) -> dict[str, Any]:
        return copy.deepcopy(self.response)


def usage(chat_usage: dict[str, Any]) -> dict[str, Any]:
    """The Responses usage for a chat usage (SpecChat's speculation stats carried along)."""
    spec = chat_usage.get("speculation")
    body: dict[str, Any] = {
        "input_tokens": chat_usage.get("prompt_tokens", 0),
        "input_tokens_details": {
            "cached_tokens": (spec or {}).get("cached_prompt_tokens") or 0,
            "cache_write_tokens": 0,
        },
        "output_tokens": chat_usage.get("completion_tokens", 0),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": chat_usage.get("total_tokens", 0),
    }
    if spec is not None:
        body["speculation"] = spec
    return body


def assistant_message(output: list[dict[str, Any]]) -> dict[str, Any]:
    """A response's output items as the chat assistant message that continues its conversation."""
    text = "".join(part["text"] for item in output if item["type"] == "message" for part in item["content"])
    calls = [
        {"id": item["call_id"], "type": "function", "function": {"name": item["name"], "arguments": item["arguments"]}}
        for item in output
        if item["type"] == "function_call"
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
    if calls:
        message["tool_calls"] = calls
    return message
