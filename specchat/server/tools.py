"""Tool calls in a model's reply: Qwen's <tool_call> blocks (Hermes JSON as Qwen2.5/Qwen3 write them, or the
<function=...> XML of Qwen3-Coder/Qwen3.5) become OpenAI tool calls. The parser takes the text in pieces of
any size, so a stream sends content at once and each call when its block closes; a block that does not
parse stays content, exactly as the model wrote it.

A block's body is read by mlx-lm's own parsers (upstream/tool_parsers.py); the splitting stays ours: mlx-lm
finds blocks by token ids inside its server's generation loop, which a stream of text pieces cannot reuse."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from specchat.engine.json_types import JSONObject, JSONValue, as_object, as_str
from specchat.upstream.tool_parsers import TOOL_CALL_CLOSE as CLOSE
from specchat.upstream.tool_parsers import TOOL_CALL_OPEN as OPEN
from specchat.upstream.tool_parsers import json_tool_call, xml_tool_call

# Qwen2.5-Coder writes a call as a fenced JSON object (the calls of offered tools only are read)
FENCE_OPEN, FENCE_CLOSE = "```json", "```"
MARKS = ((OPEN, CLOSE), (FENCE_OPEN, FENCE_CLOSE))
_FUNCTION = re.compile(r"<function=[^>\n]+>.*?</function>", re.DOTALL)


def new_call_id() -> str:
    """A fresh OpenAI-style tool call id: call_<24 hex digits>."""
    return "call_" + uuid.uuid4().hex[:24]


@dataclass(frozen=True)
class ToolCall:
    """One parsed call: its index among the reply's calls, its id, the function's name, the arguments as JSON text."""

    index: int
    id: str
    name: str
    arguments: str

    def message_entry(self) -> JSONObject:
        """The call as an entry of a whole response's message.tool_calls."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}

    def deltas(self) -> list[JSONObject]:
        """The call as streamed delta.tool_calls entries: index, id, type and name first, then the arguments."""
        head: JSONObject = {
            "index": self.index,
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": ""},
        }
        return [head, {"index": self.index, "function": {"arguments": self.arguments}}]


Piece = str | ToolCall


def function_name(entry: Mapping[str, JSONValue]) -> str:
    """The function name of an OpenAI tool or tool call ({"function": {"name": ...}}); "" when it names none."""
    return as_str(as_object(entry.get("function")).get("name"))


class ToolCallParser:
    """Splits a reply fed in pieces into content text and ToolCalls; call finish() once the reply ended.

    The whitespace right before a call and after the last one (the template's line breaks) is dropped;
    everything else comes back unchanged, and the pieces are the same however the text was cut.
    """

    def __init__(
        self,
        tools: Sequence[Mapping[str, JSONValue]] = (),
        new_id: Callable[[], str] = new_call_id,
        max_calls: int | None = None,
    ):
        self.tools = tuple(tools)
        self.new_id = new_id
        self.max_calls = max_calls  # parallel_tool_calls false: 1 (the calls after it are dropped)
        self.calls: list[ToolCall] = []
        self.cut = False  # max_tokens ended the reply inside a call block
        self._pending = ""  # text not sent yet: a held-back tail, or the open block's body
        self._block: tuple[str, str] | None = None  # the open block's marks: (OPEN, CLOSE) or a ```json fence
        self._scanned = 0  # how far the open block's body is known to hold no closing mark
        self._before = ""  # whitespace held before the open block (sent with it when it does not parse)
        self._after_call = False  # no text since the last call: whitespace left at the end is dropped

    def feed(self, text: str) -> list[Piece]:
        """The content and the calls that are certain now."""
        self._pending += text
        out: list[Piece] = []
        while True:
            if self._block is not None:
                close = self._block[1]
                end = self._pending.find(close, self._scanned)
                if end < 0:
                    self._scanned = max(0, len(self._pending) - len(close) + 1)
                    return out
                body, self._pending = self._pending[:end], self._pending[end + len(close) :]
                out += self._close(body, closed=True)
                continue
            found = [(i, marks) for marks in MARKS if (i := self._pending.find(marks[0])) >= 0]
            if not found:
                return out + self._send(self._ready())
            start, self._block = min(found)
            before, self._pending = self._pending[:start], self._pending[start + len(self._block[0]) :]
            content = before.rstrip()
            self._before = before[len(content) :]
            out += self._send(content)

    def finish(self, cut: bool = False) -> list[Piece]:
        """What was held back: the tail, or an unclosed block (a call if it parses, else content; when max_tokens
        cut the reply (`cut`), such a block is dropped and `self.cut` tells it, never raw call text)."""
        if self._block is not None:
            body, self._pending = self._pending, ""
            if cut and parse_block(body, self.tools, self._block[0]) is None:
                self._block, self._scanned, self._before, self.cut = None, 0, "", True
                return []
            return self._close(body, closed=False)
        rest, self._pending = self._pending, ""
        return [] if self._after_call and not rest.strip() else self._send(rest)

    def _ready(self) -> str:
        """The pending text that can go now: all but a tail that may open a block (or precede one)."""
        hold = max(
            (k for opener, _ in MARKS for k in range(len(opener) - 1, 0, -1) if self._pending.endswith(opener[:k])),
            default=0,
        )
        ready = self._pending[: len(self._pending) - hold].rstrip()
        self._pending = self._pending[len(ready) :]
        return ready

    def _send(self, text: str) -> list[Piece]:
        if not text:
            return []
        self._after_call = False
        return [text]

    def _close(self, body: str, closed: bool) -> list[Piece]:
        assert self._block is not None
        (opener, closer), self._block, self._scanned = self._block, None, 0
        before, self._before = self._before, ""
        parsed = parse_block(body, self.tools, opener)
        if parsed is None:
            return self._send(before + opener + body + (closer if closed else ""))
        room = len(parsed) if self.max_calls is None else max(0, self.max_calls - len(self.calls))
        calls = [
            ToolCall(len(self.calls) + i, self.new_id(), name, args) for i, (name, args) in enumerate(parsed[:room])
        ]
        self.calls += calls
        self._after_call = True
        return list(calls)


def split_tool_calls(
    text: str, tools: Sequence[Mapping[str, JSONValue]] = (), new_id: Callable[[], str] = new_call_id
) -> tuple[str, list[ToolCall]]:
    """A whole reply's content (the text outside the calls) and its tool calls."""
    parser = ToolCallParser(tools, new_id)
    pieces = parser.feed(text) + parser.finish()
    return "".join(p for p in pieces if isinstance(p, str)), parser.calls


def read_reply(text: str, parser: ToolCallParser, cut: bool) -> str:
    """A whole reply through `parser`: the content left (its calls in parser.calls; cut: max_tokens ended it)."""
    pieces = parser.feed(text) + parser.finish(cut)
    return "".join(p for p in pieces if isinstance(p, str))


def parse_block(
    body: str, tools: Sequence[Mapping[str, JSONValue]], opener: str = OPEN
) -> list[tuple[str, str]] | None:
    """(name, arguments JSON) of each call in one block's body, or None when it is not a well-formed call."""
    text = body.strip()
    if opener == FENCE_OPEN:
        return _fenced_calls(text, tools)
    if text.startswith("<function="):
        return _xml_calls(text, tools)
    return _json_calls(text)


def _json_calls(text: str) -> list[tuple[str, str]] | None:
    try:
        value = json_tool_call(text)
    except ValueError:
        return None
    items = value if isinstance(value, list) else [value]
    calls = [_json_call(item) for item in items]
    if not calls or any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def _fenced_calls(text: str, tools: Sequence[Mapping[str, JSONValue]]) -> list[tuple[str, str]] | None:
    """A ```json fence holding {"name": ..., "arguments": {...}} (or a list of them) of offered tools only: how
    Qwen2.5-Coder writes calls; any other fenced JSON stays content."""
    names = {function_name(t) for t in tools}
    calls = _json_calls(text)
    if calls is None or any(name not in names for name, _ in calls):
        return None
    return calls


def _json_call(item: object) -> tuple[str, str] | None:
    """{"name": ..., "arguments": {...}} (arguments may come as a JSON string, or as "parameters")."""
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
        return None
    arguments = item.get("arguments", item.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return item["name"], json.dumps(arguments, ensure_ascii=False)


def _xml_calls(text: str, tools: Sequence[Mapping[str, JSONValue]]) -> list[tuple[str, str]] | None:
    """Each <function=...> of the block (mlx-lm reads one per call); None for text outside them."""
    if "</function>" not in text:  # the models sometimes close the block without closing the function
        text += "</function>"
    functions = _FUNCTION.findall(text)
    if not functions or _FUNCTION.sub("", text).strip():
        return None
    try:
        calls = [xml_tool_call(function, tools) for function in functions]
    except ValueError:
        return None
    return [(name, json.dumps(arguments, ensure_ascii=False)) for name, arguments in calls]
