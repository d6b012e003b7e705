"""The Responses API's streamed events from the OpenAI chat chunks the server makes: response.created and
.in_progress, an output item per text run (a message with one output_text part) and per tool call (a
function_call), their deltas and done events, then response.completed (or .incomplete at max_output_tokens).
The whole response is the one the last event carries."""

from __future__ import annotations

import copy
import time
import uuid
from dataclasses import dataclass

from specchat.engine.json_types import JSONObject, JSONValue, as_int, as_object, as_str, objects


def new_id(prefix: str) -> str:
    """An OpenAI-style id: the prefix, an underscore, 24 hex digits."""
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


@dataclass
class _Item:
    """One output item: a message (its one output_text part) or a function call."""

    id: str
    type: str  # "message" or "function_call"
    status: str = "in_progress"
    text: str = ""  # a message's text
    has_part: bool = False  # a message's output_text part was added
    call_id: str = ""
    name: str = ""
    arguments: str = ""

    def part(self) -> JSONObject:
        """A message's output_text part."""
        return {"type": "output_text", "text": self.text, "annotations": [], "logprobs": []}

    def body(self) -> JSONObject:
        """The item as the Responses API writes it."""
        if self.type == "message":
            content: list[JSONValue] = [self.part()] if self.has_part else []
            return {"id": self.id, "type": "message", "status": self.status, "role": "assistant", "content": content}
        return {
            "id": self.id,
            "type": "function_call",
            "status": self.status,
            "call_id": self.call_id,
            "name": self.name,
            "arguments": self.arguments,
        }


class ResponsesEvents:
    """Turns OpenAI chat chunks (dicts) into Responses events (dicts with type and sequence_number), in order."""

    def __init__(self, model: str, echo: JSONObject, single_call: bool = False):
        self.response: JSONObject = {
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
        }  # its "output" is filled in by each snapshot, from the items
        self.single_call = single_call  # parallel_tool_calls false: the first call only
        self.sequence = 0
        self.open: int | None = None  # the output index of the item still open
        self.calls: dict[int, int] = {}  # chat tool-call index -> output index
        self.reason: str | None = None
        self._items: list[_Item] = []

    @property
    def output(self) -> list[JSONObject]:
        """The output items so far."""
        return [item.body() for item in self._items]

    def start(self) -> list[JSONObject]:
        """response.created and response.in_progress."""
        return [
            self._event("response.created", response=self._snapshot()),
            self._event("response.in_progress", response=self._snapshot()),
        ]

    def chunk(self, chunk: JSONObject) -> list[JSONObject]:
        """The events one chat chunk makes."""
        if chunk.get("usage"):
            self.response["usage"] = usage(as_object(chunk["usage"]))
        out: list[JSONObject] = []
        for choice in objects(chunk.get("choices")):
            delta = as_object(choice.get("delta"))
            text = as_str(delta.get("content"))
            if text:
                out += self._text(text)
            for call in objects(delta.get("tool_calls")):
                out += self._call(call)
            if choice.get("finish_reason"):
                self.reason = as_str(choice["finish_reason"])
        return out

    def finish(self) -> list[JSONObject]:
        """The open item's done events and response.completed, or response.incomplete at the token limit."""
        incomplete = self.reason == "length"
        out = self._close("incomplete" if incomplete else "completed")
        self.response["status"] = "incomplete" if incomplete else "completed"
        if incomplete:
            self.response["incomplete_details"] = {"reason": "max_output_tokens"}
        kind = "response.incomplete" if incomplete else "response.completed"
        return [*out, self._event(kind, response=self._snapshot())]

    def error(self, error: JSONObject) -> JSONObject:
        """The error event for an OpenAI error object that ended the generation."""
        fields = {k: error.get(k) for k in ("code", "message", "param")}
        return self._event("error", **fields)

    def _text(self, text: str) -> list[JSONObject]:
        out: list[JSONObject] = []
        if self.open is None or self._items[self.open].type != "message":
            out += self._close("completed")
            item = _Item(new_id("msg"), "message")
            out.append(self._added(item))
            item.has_part = True
            out.append(self._on_item("response.content_part.added", content_index=0, part=item.part()))
        self._items[-1].text += text
        out.append(self._on_item("response.output_text.delta", content_index=0, delta=text, logprobs=[]))
        return out

    def _call(self, call: JSONObject) -> list[JSONObject]:
        index = as_int(call.get("index"))
        if self.single_call and index > 0:
            return []
        function = as_object(call.get("function"))
        out: list[JSONObject] = []
        if index not in self.calls:
            out += self._close("completed")
            item = _Item(new_id("fc"), "function_call", call_id=as_str(call.get("id")) or new_id("call"))
            item.name = as_str(function.get("name"))
            out.append(self._added(item))
            self.calls[index] = len(self._items) - 1
        arguments = as_str(function.get("arguments"))
        if arguments:
            self._items[self.calls[index]].arguments += arguments
            out.append(self._on_item("response.function_call_arguments.delta", delta=arguments))
        return out

    def _added(self, item: _Item) -> JSONObject:
        self._items.append(item)
        self.open = len(self._items) - 1
        return self._event("response.output_item.added", output_index=self.open, item=item.body())

    def _close(self, status: str) -> list[JSONObject]:
        """The done events of the open item, which ends with `status`."""
        if self.open is None:
            return []
        item = self._items[self.open]
        out: list[JSONObject] = []
        if item.type == "message":
            out.append(self._on_item("response.output_text.done", content_index=0, text=item.text, logprobs=[]))
            out.append(self._on_item("response.content_part.done", content_index=0, part=item.part()))
        else:
            out.append(self._on_item("response.function_call_arguments.done", arguments=item.arguments, name=item.name))
        item.status = status if item.type == "message" else "completed"
        out.append(self._event("response.output_item.done", output_index=self.open, item=item.body()))
        self.open = None
        return out

    def _on_item(self, kind: str, **fields: JSONValue) -> JSONObject:
        """An event about the open item: its id and output index, and `fields`."""
        assert self.open is not None
        return self._event(kind, item_id=self._items[self.open].id, output_index=self.open, **fields)

    def _event(self, kind: str, **fields: JSONValue) -> JSONObject:
        event: JSONObject = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return event

    def _snapshot(self) -> JSONObject:
        snapshot = copy.deepcopy(self.response)
        items: list[JSONValue] = list(self.output)
        snapshot["output"] = items
        return snapshot


def usage(chat_usage: JSONObject) -> JSONObject:
    """The Responses usage for a chat usage (SpecChat's speculation stats carried along)."""
    spec = chat_usage.get("speculation")
    body: JSONObject = {
        "input_tokens": chat_usage.get("prompt_tokens", 0),
        "input_tokens_details": {
            "cached_tokens": as_object(spec).get("cached_prompt_tokens") or 0,
            "cache_write_tokens": 0,
        },
        "output_tokens": chat_usage.get("completion_tokens", 0),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": chat_usage.get("total_tokens", 0),
    }
    if spec is not None:
        body["speculation"] = spec
    return body


def assistant_message(output: list[JSONObject]) -> JSONObject:
    """A response's output items as the chat assistant message that continues its conversation."""
    text = "".join(
        as_str(part.get("text"))
        for item in output
        if item.get("type") == "message"
        for part in objects(item.get("content"))
    )
    calls: list[JSONValue] = [
        {
            "id": item.get("call_id"),
            "type": "function",
            "function": {"name": item.get("name"), "arguments": item.get("arguments")},
        }
        for item in output
        if item.get("type") == "function_call"
    ]
    message: JSONObject = {"role": "assistant", "content": text if text or not calls else None}
    if calls:
        message["tool_calls"] = calls
    return message
