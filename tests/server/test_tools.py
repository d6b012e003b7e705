"""Tool calls in a reply: the parser over recorded Qwen outputs (cut every way), the response and stream
builders, and a scripted engine's tool call through the real server read back by the official client."""

import itertools
import json
from pathlib import Path

import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from specchat.engine.events import Finished, GenerationStats, TextChunk
from specchat.server.app import ServerOptions
from specchat.server.backend import EngineBackend
from specchat.server.responses import ResponseShape, StreamedChoice, usage
from specchat.server.running import BackgroundServer, free_port
from specchat.server.tools import ToolCall, ToolCallParser, split_tool_calls

from .conftest import API_KEY, DEFAULTS

DATA = Path(__file__).resolve().parents[1] / "data" / "tool_calls"
TOOLS = json.loads((DATA / "tools.json").read_text(encoding="utf-8"))
EXPECTED = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))
RECORDED = sorted(EXPECTED)


def recorded(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def counter_ids():
    """Deterministic call ids (call_0, call_1, ...) so runs can be compared."""
    numbers = itertools.count()
    return lambda: f"call_{next(numbers)}"


def replay(text: str, size: int, tools=TOOLS) -> list:
    """The parser's pieces for `text` fed `size` characters at a time, adjacent text merged."""
    parser = ToolCallParser(tools, counter_ids())
    pieces = [p for i in range(0, len(text), size) for p in parser.feed(text[i : i + size])] + parser.finish()
    merged: list = []
    for piece in pieces:
        if isinstance(piece, str) and merged and isinstance(merged[-1], str):
            merged[-1] += piece
        else:
            merged.append(piece)
    return merged


def summary(content: str, calls: list[ToolCall]) -> dict:
    return {"content": content, "calls": [{"name": c.name, "arguments": json.loads(c.arguments)} for c in calls]}


@pytest.mark.parametrize("name", RECORDED)
def test_a_recorded_reply_parses_the_same_in_pieces_of_every_size(name):
    text = recorded(name)
    whole = replay(text, len(text))
    content = "".join(p for p in whole if isinstance(p, str))
    assert summary(content, [p for p in whole if isinstance(p, ToolCall)]) == EXPECTED[name]
    for size in range(1, len(text)):
        assert replay(text, size) == whole, f"pieces of {size} characters"


@pytest.mark.parametrize("name", RECORDED)
def test_split_tool_calls_gives_the_content_and_numbered_calls(name):
    content, calls = split_tool_calls(recorded(name), TOOLS)
    assert summary(content, calls) == EXPECTED[name]
    assert [c.index for c in calls] == list(range(len(calls)))
    assert all(c.id.startswith("call_") and len(c.id) > 10 for c in calls) and len({c.id for c in calls}) == len(calls)


@pytest.mark.parametrize(
    "text, content, calls",
    [
        ("No tools needed: 2 < 3 and <b>bold</b>.", "No tools needed: 2 < 3 and <b>bold</b>.", []),
        ("Ends with a partial tag <tool_", "Ends with a partial tag <tool_", []),
        ("  spaced  \n\n", "  spaced  \n\n", []),  # no call: the text is kept to the last space
        ('<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>', "", [("f", {"a": 1})]),
        ('<tool_call>{"name": "f", "parameters": {"a": 1}}</tool_call>', "", [("f", {"a": 1})]),
        ('<tool_call>{"name": "f"}</tool_call>', "", [("f", {})]),
        (
            '<tool_call>[{"name": "f", "arguments": {}}, {"name": "g", "arguments": {}}]</tool_call>',
            "",
            [("f", {}), ("g", {})],
        ),
        ('<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n', "", [("f", {"a": 1})]),  # unclosed at the end
        ('<tool_call>\n{"name": "f", "argu', '<tool_call>\n{"name": "f", "argu', []),  # cut off: content
        ('<tool_call>{"arguments": {}}</tool_call>', '<tool_call>{"arguments": {}}</tool_call>', []),  # no name
        (
            '<tool_call>{"name": "f", "arguments": [1]}</tool_call>',
            '<tool_call>{"name": "f", "arguments": [1]}</tool_call>',
            [],
        ),
        ("<tool_call>not json</tool_call> after", "<tool_call>not json</tool_call> after", []),
        ('A\n<tool_call>{"name": "f"}</tool_call>\nB\n', "A\nB\n", [("f", {})]),
        ('<tool_call>{"name": "f"}</tool_call>\n \n<tool_call>{"name": "g"}</tool_call>\n', "", [("f", {}), ("g", {})]),
        ("<tool_call>\n<function=f>\n<parameter=x>\n1\n</parameter>\n</tool_call>", "", [("f", {"x": "1"})]),
        (
            "<tool_call>\n<function=f>\n</function>\nstray</tool_call>",
            "<tool_call>\n<function=f>\n</function>\nstray</tool_call>",
            [],
        ),
    ],
)
def test_tool_call_blocks_and_what_stays_content(text, content, calls):
    got_content, got_calls = split_tool_calls(text, [])
    assert got_content == content
    assert [(c.name, json.loads(c.arguments)) for c in got_calls] == calls
    for size in (1, 2, 5):
        assert replay(text, size, []) == replay(text, len(text) or 1, [])


def test_xml_parameters_take_the_types_of_the_tools_schema():
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "ok": {"type": "boolean"},
            "obj": {"type": "object"},
            "items": {"type": "array"},
            "text": {"type": "string"},
            "maybe": {"type": ["integer", "null"]},
            "loose": {"description": "no type"},
        },
    }
    tools = [{"type": "function", "function": {"name": "f", "parameters": schema}}]
    params = {
        "n": "42",
        "x": "2.5",
        "ok": "False",
        "obj": '{"a": [1]}',
        "items": "[1, 2]",
        "text": "007",
        "maybe": "null",
        "loose": '{"k": 1}',
        "unknown": "12",
        "bad_int": "twelve",
    }
    schema["properties"]["bad_int"] = {"type": "integer"}
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    _, calls = split_tool_calls(f"<tool_call>\n<function=f>\n{body}</function>\n</tool_call>", tools)
    assert json.loads(calls[0].arguments) == {
        "n": 42,
        "x": 2.5,
        "ok": False,
        "obj": {"a": [1]},
        "items": [1, 2],
        "text": "007",
        "maybe": None,
        "loose": {"k": 1},
        "unknown": "12",  # not in the schema: text, as Qwen3-Coder's own parser leaves it
        "bad_int": "twelve",
    }


def test_an_unreadable_xml_value_stays_text_and_every_function_of_a_block_is_a_call():
    properties = {"n": {"type": "integer"}, "big": {"type": "integer"}, "odd": 5}
    tools = [
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": properties}}}
    ]
    params = {"n": "7", "big": "1e999", "odd": "[1]"}
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    text = f"<tool_call>\n<function=f>\n{body}</function>\n<function=g>\n<parameter=x>\n2\n</parameter>\n</function>\n</tool_call>"
    content, calls = split_tool_calls(text, tools)
    assert content == "" and [c.name for c in calls] == ["f", "g"]
    assert json.loads(calls[0].arguments) == {"n": 7, "big": "1e999", "odd": "[1]"}
    assert json.loads(calls[1].arguments) == {"x": "2"}  # g is no tool: its values stay text


def test_the_whole_response_carries_tool_calls_and_a_null_content():
    content, calls = split_tool_calls(recorded("qwen3_hermes.txt"), TOOLS)
    shape = ResponseShape("chat", "tiny")
    body = shape.whole("", "tool_calls", usage(10, None, 5), calls)
    reply = ChatCompletion.model_validate(body)
    message = reply.choices[0].message
    assert message.content is None and reply.choices[0].finish_reason == "tool_calls"
    assert [(c.id, c.type, c.function.name) for c in message.tool_calls] == [(c.id, "function", c.name) for c in calls]
    assert json.loads(message.tool_calls[1].function.arguments) == {"location": "Tokyo, Japan", "unit": "celsius"}
    with_text = ChatCompletion.model_validate(shape.whole(content, "tool_calls", usage(10, None, 5), calls))
    assert with_text.choices[0].message.content == content
    plain = ChatCompletion.model_validate(shape.whole("", "stop", usage(10, None, 0)))
    assert plain.choices[0].message.content == "" and plain.choices[0].message.tool_calls is None


def streamed_message(text: str, size: int):
    """The message the official client's own accumulator builds from the chunks StreamedChoice makes."""
    shape = ResponseShape("chat", "tiny")
    choice = StreamedChoice(shape, ToolCallParser(TOOLS))
    bodies = [b for i in range(0, len(text), size) for b in choice.feed(text[i : i + size])] + choice.finish()
    bodies.append(shape.chunk(None, "tool_calls" if choice.called_tools else "stop"))
    state = ChatCompletionStreamState()
    for body in bodies:
        state.handle_chunk(ChatCompletionChunk.model_validate(body))
    return bodies, state.get_final_completion().choices[0]


@pytest.mark.parametrize("name", RECORDED)
def test_streamed_deltas_accumulate_to_the_same_message(name):
    text, expected = recorded(name), EXPECTED[name]
    for size in (1, 4, 17, len(text)):
        bodies, choice = streamed_message(text, size)
        assert bodies[0]["choices"][0]["delta"]["role"] == "assistant"
        assert all("role" not in b["choices"][0]["delta"] for b in bodies[1:])
        calls = choice.message.tool_calls or []
        got = {
            "content": choice.message.content or "",
            "calls": [{"name": c.function.name, "arguments": json.loads(c.function.arguments)} for c in calls],
        }
        assert got == expected
        assert choice.finish_reason == ("tool_calls" if expected["calls"] else "stop")
        assert all(c.id.startswith("call_") and c.type == "function" for c in calls)


def test_each_call_streams_its_header_then_its_arguments():
    bodies, _ = streamed_message(recorded("qwen3_hermes.txt"), 3)
    deltas = [d for b in bodies for d in b["choices"][0]["delta"].get("tool_calls", [])]
    assert [d["index"] for d in deltas] == [0, 0, 1, 1]
    head, arguments = deltas[0], deltas[1]
    assert head["type"] == "function" and head["id"].startswith("call_")
    assert head["function"] == {"name": "get_current_weather", "arguments": ""}
    assert set(arguments) == {"index", "function"} and json.loads(arguments["function"]["arguments"])


class ScriptedBackend(EngineBackend):
    """The real server path over the host's tokenizer, but every job's reply is the script's text pieces."""

    script: tuple[str, ...] = ()

    def generation_work(self, prompt_ids, cfg):
        pieces = self.script

        def work(ctx):
            for piece in pieces:
                ctx.emit(TextChunk(piece, (0,), (False,)))
            stats = GenerationStats(generated_tokens=len(pieces), stop_reason="eos")
            ctx.emit(Finished(tuple(range(len(pieces))), "".join(pieces), stats))

        return work


@pytest.fixture(scope="module")
def scripted(host):
    backend = ScriptedBackend(host)
    server = BackgroundServer(backend, ServerOptions(DEFAULTS, api_key=API_KEY), port=free_port())
    server.start()
    yield backend, server
    server.stop()


@pytest.fixture
def scripted_client(scripted):
    from openai import OpenAI

    return OpenAI(base_url=scripted[1].url + "/v1", api_key=API_KEY, max_retries=0, timeout=60)


ASK = [{"role": "user", "content": "What's the weather in Paris and Tokyo?"}]


@pytest.mark.parametrize("name", RECORDED)
def test_a_scripted_tool_call_comes_back_through_the_real_server(scripted, scripted_client, name):
    backend, _ = scripted
    text, expected = recorded(name), EXPECTED[name]
    backend.script = tuple(text[i : i + 5] for i in range(0, len(text), 5))  # token-sized pieces
    reply = scripted_client.chat.completions.create(model="dense_target", messages=ASK, tools=TOOLS)
    message = reply.choices[0].message
    calls = message.tool_calls or []
    assert [{"name": c.function.name, "arguments": json.loads(c.function.arguments)} for c in calls] == expected[
        "calls"
    ]
    assert message.content == (expected["content"] or None)
    assert reply.choices[0].finish_reason == ("tool_calls" if calls else "stop")
    stream = scripted_client.chat.completions.create(model="dense_target", messages=ASK, tools=TOOLS, stream=True)
    content, streamed, reasons = "", {}, []
    for chunk in stream:
        delta = chunk.choices[0].delta
        content += delta.content or ""
        for call in delta.tool_calls or []:
            entry = streamed.setdefault(call.index, {"id": call.id, "name": call.function.name, "arguments": ""})
            entry["arguments"] += call.function.arguments or ""
        reasons.append(chunk.choices[0].finish_reason)
    assert content == expected["content"] and reasons[-1] == reply.choices[0].finish_reason
    assert [{"name": c["name"], "arguments": json.loads(c["arguments"])} for c in streamed.values()] == expected[
        "calls"
    ]
    assert all(c["id"].startswith("call_") for c in streamed.values())


def test_without_tools_or_with_tool_choice_none_the_reply_stays_text(scripted, scripted_client):
    backend, _ = scripted
    text = recorded("qwen3_hermes.txt")
    backend.script = (text,)
    for extra in ({}, {"tools": TOOLS, "tool_choice": "none"}):
        reply = scripted_client.chat.completions.create(model="dense_target", messages=ASK, **extra)
        assert reply.choices[0].message.content == text and reply.choices[0].message.tool_calls is None
        assert reply.choices[0].finish_reason == "stop"
