"""Ollama's replies from the OpenAI chunks the server makes: a line per text delta (message.content for
/api/chat, response for /api/generate), tool calls with their arguments as an object, and a last line with
done, done_reason and the counts and durations (nanoseconds). A reply's <think>...</think> block is
split from its answer when the request asked to think (message.thinking, or thinking on /api/generate)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

from specchat.engine.json_types import JSONObject, JSONValue, as_int, as_list, as_object, as_str, objects

NS = 1_000_000_000
OPEN, CLOSE = "<think>", "</think>"


def created_at() -> str:
    """Now, as Ollama writes its timestamps (RFC 3339, UTC)."""
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def tool_call(call_id: str, index: int, name: str, arguments: str) -> JSONObject:
    """An OpenAI tool call (arguments as JSON text) as Ollama's: arguments as an object."""
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        parsed = {"_raw": arguments}
    args = parsed if isinstance(parsed, dict) else {"_value": parsed}
    return {"id": call_id, "function": {"index": index, "name": name, "arguments": args}}


class OllamaReply:
    """Turns one request's OpenAI chunks (dicts) into Ollama's objects, in order; `kind` is chat or generate."""

    def __init__(self, kind: str, model: str, prompt_tokens: int, started_ns: int, think: ThinkSplitter | None = None):
        self.kind, self.model, self.prompt_tokens, self.started_ns = kind, model, prompt_tokens, started_ns
        self.think = think  # splits the thinking off the answer when the request asked to think
        self.calls: dict[int, tuple[str, str]] = {}  # OpenAI tool-call index -> (id, name) until its arguments
        self.reason = "stop"
        self.usage: JSONObject = {}

    def chunk(self, chunk: JSONObject) -> list[JSONObject]:
        """The lines one OpenAI chunk makes: its text, its complete tool calls."""
        if chunk.get("usage"):
            self.usage = as_object(chunk["usage"])
        out: list[JSONObject] = []
        for choice in objects(chunk.get("choices")):
            delta = as_object(choice.get("delta"))
            text = as_str(delta.get("content") if "delta" in choice else choice.get("text"))
            if text:
                out += self._text(text)
            for call in objects(delta.get("tool_calls")):
                out += self._tool_delta(call)
            if choice.get("finish_reason"):
                self.reason = "length" if choice["finish_reason"] == "length" else "stop"
        return out

    def line(self, text: str = "", calls: list[JSONObject] | None = None, thinking: str = "") -> JSONObject:
        """One line that is not the last: a text (and thinking) delta, or tool calls."""
        body: JSONObject = {"model": self.model, "created_at": created_at()}
        if self.kind == "chat":
            message: JSONObject = {"role": "assistant", "content": text}
            message.update({"thinking": thinking} if thinking else {})
            listed: list[JSONValue] = list(calls or [])
            message.update({"tool_calls": listed} if listed else {})
            body["message"] = message
        else:
            body["response"] = text
            body.update({"thinking": thinking} if thinking else {})
        body["done"] = False
        return body

    def finish(self) -> list[JSONObject]:
        """The held-back text, then the last line: done, the reason, the counts and durations."""
        body = self.line()
        body.update({"done": True, "done_reason": self.reason, **self.figures()})
        return self._text("", flush=True) + [body]

    def _text(self, text: str, flush: bool = False) -> list[JSONObject]:
        if self.think is None:
            return [self.line(text)] if text else []
        thinking, content = self.think.flush() if flush else self.think.feed(text)
        return [self.line(content, thinking=thinking)] if thinking or content else []

    def figures(self) -> dict[str, int]:
        """Ollama's counts and durations (ns): the prompt's tokens and time to first token, the reply's tokens and
        decode time (its tokens over the decode speed), the whole request; the model was loaded before."""
        spec = as_object(self.usage.get("speculation"))
        evals = as_int(self.usage.get("completion_tokens"))
        speed = _number(spec.get("decode_tokens_per_s"))
        return {
            "total_duration": time.monotonic_ns() - self.started_ns,
            "load_duration": 0,
            "prompt_eval_count": self.prompt_tokens,
            "prompt_eval_duration": int(_number(spec.get("ttft_s")) * NS),
            "eval_count": evals,
            "eval_duration": int(evals / speed * NS) if speed > 0 else 0,
        }

    def _tool_delta(self, delta: JSONObject) -> list[JSONObject]:
        """A call is sent whole once its arguments come (OpenAI's deltas: the name first, then the arguments)."""
        index = as_int(delta.get("index"))
        function = as_object(delta.get("function"))
        call_id, name = self.calls.get(index, (as_str(delta.get("id")), ""))
        name = as_str(function.get("name")) or name
        self.calls[index] = (call_id, name)
        arguments = as_str(function.get("arguments"))
        if not arguments:
            return []
        return [self.line(calls=[tool_call(call_id, index, name, arguments)])]


def whole(lines: list[JSONObject]) -> JSONObject:
    """The non-streamed reply: the lines folded into the last one (text joined, tool calls gathered)."""
    last = dict(lines[-1])
    parts = [as_object(line["message"]) if "message" in line else line for line in lines]
    text = "".join(as_str(part.get("content", part.get("response"))) for part in parts)
    thinking: JSONObject = (
        {"thinking": "".join(as_str(p.get("thinking")) for p in parts)} if any("thinking" in p for p in parts) else {}
    )
    if "message" in last:
        calls = [call for part in parts for call in as_list(part.get("tool_calls"))]
        last["message"] = {"role": "assistant", "content": text, **thinking, **({"tool_calls": calls} if calls else {})}
    else:
        last.update({"response": text, **thinking})
    return last


class ThinkSplitter:
    """Feeds text, returns (thinking, content); opened says the prompt already opened the block."""

    def __init__(self, opened: bool = False):
        self.state = "opening" if opened else "start"
        self.held = ""

    def feed(self, text: str) -> tuple[str, str]:
        """The thinking and the answer that are certain now (a tail that may start a tag is held)."""
        self.held += text
        thinking, content = "", ""
        while True:
            if self.state == "start":
                if not self._start():
                    return thinking, content
            elif self.state == "thinking":
                end = self.held.find(CLOSE)
                if end < 0:
                    keep = _tag_tail(self.held, CLOSE)
                    thinking += self.held[: len(self.held) - keep]
                    self.held = self.held[len(self.held) - keep :]
                    return thinking, content
                thinking += self.held[:end]
                self.held, self.state = self.held[end + len(CLOSE) :], "after"
            elif self.state in ("opening", "after"):  # whitespace around the block is the template's
                self.held = self.held.lstrip()
                if not self.held:
                    return thinking, content
                self.state = "thinking" if self.state == "opening" else "content"
            else:
                content, self.held = content + self.held, ""
                return thinking, content

    def flush(self) -> tuple[str, str]:
        """What was held back, once the reply ended."""
        held, self.held = self.held, ""
        if self.state in ("opening", "thinking"):
            return held.lstrip() if self.state == "opening" else held, ""
        return "", held.lstrip() if self.state == "after" else held

    def _start(self) -> bool:
        """Decide whether the reply opens with a block; False while the text so far cannot tell."""
        lead = self.held.lstrip()
        if lead.startswith(OPEN):
            self.held, self.state = lead[len(OPEN) :], "opening"
            return True
        if not lead or OPEN.startswith(lead):
            return False
        self.state = "content"
        return True


def _tag_tail(text: str, tag: str) -> int:
    """How many characters at the end of text may start tag."""
    return next((k for k in range(len(tag) - 1, 0, -1) if text.endswith(tag[:k])), 0)


def _number(value: JSONValue) -> float:
    """A figure of the speculation stats; 0 when it is missing or null."""
    return float(value) if isinstance(value, int | float) else 0.0
