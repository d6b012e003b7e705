"""Streamed tool calls split at every character boundary, through all three wire formats: OpenAI chunks,
Anthropic events and Ollama lines. Whatever the split, each format carries the same text and the same calls,
and no tool-call markup ever reaches a client as text."""

import json

import pytest

from specchat.server.anthropic_stream import AnthropicEvents
from specchat.server.ollama_reply import OllamaReply
from specchat.server.responses import ResponseShape, StreamedChoice
from specchat.server.tools import ToolCallParser

from .test_tools import EXPECTED, RECORDED, TOOLS, recorded

MARKUP = ("<tool_call", "</tool_call", "<function=", "</function", "<parameter=")


def splits(text: str):
    """Every two-piece split, every character alone, and a few ragged cuts."""
    for i in range(len(text) + 1):
        yield [text[:i], text[i:]]
    yield list(text)
    for size in (2, 3, 5, 7, 11):
        yield [text[i : i + size] for i in range(0, len(text), size)]


def openai_chunks(pieces: list[str]) -> list[dict]:
    choice = StreamedChoice(ResponseShape("chat", "m"), ToolCallParser(TOOLS))
    return [c for piece in pieces for c in choice.feed(piece)] + choice.finish()


def openai_view(chunks: list[dict]) -> dict:
    text, calls = "", {}
    for chunk in chunks:
        delta = chunk["choices"][0]["delta"]
        text += delta.get("content") or ""
        for call in delta.get("tool_calls") or []:
            entry = calls.setdefault(call["index"], {"name": "", "arguments": ""})
            entry["name"] += call.get("function", {}).get("name") or ""
            entry["arguments"] += call.get("function", {}).get("arguments") or ""
    return {"content": text, "calls": [parsed(calls[i]) for i in sorted(calls)]}


def anthropic_view(chunks: list[dict]) -> dict:
    events = AnthropicEvents("m", 1)
    out = [e for c in chunks for e in events.chunk(c)] + events.finish()
    text, calls = "", {}
    for name, data in out:
        if name == "content_block_start" and data["content_block"]["type"] == "tool_use":
            calls[data["index"]] = {"name": data["content_block"]["name"], "arguments": ""}
        elif name == "content_block_delta" and data["delta"]["type"] == "text_delta":
            text += data["delta"]["text"]
        elif name == "content_block_delta" and data["delta"]["type"] == "input_json_delta":
            calls[data["index"]]["arguments"] += data["delta"]["partial_json"]
    return {"content": text, "calls": [parsed(calls[i]) for i in sorted(calls)]}


def ollama_view(chunks: list[dict]) -> dict:
    reply = OllamaReply("chat", "m", 1, 0)
    lines = [line for c in chunks for line in reply.chunk(c)] + reply.finish()
    text = "".join(line["message"]["content"] for line in lines)
    calls = [call["function"] for line in lines for call in line["message"].get("tool_calls") or []]
    return {"content": text, "calls": [{"name": c["name"], "arguments": c["arguments"]} for c in calls]}


def parsed(call: dict) -> dict:
    return {"name": call["name"], "arguments": json.loads(call["arguments"] or "{}")}


@pytest.mark.parametrize("name", RECORDED)
def test_every_split_gives_the_same_calls_and_no_markup_in_any_format(name):
    text, expected = recorded(name), EXPECTED[name]
    for pieces in splits(text):
        chunks = openai_chunks(pieces)
        for view in (openai_view, anthropic_view, ollama_view):
            got = view(chunks)
            assert got["calls"] == expected["calls"], (view.__name__, pieces)
            assert got["content"].strip() == expected["content"].strip(), (view.__name__, pieces)
            if expected["calls"]:
                assert not any(mark in got["content"] for mark in MARKUP), (view.__name__, pieces)
