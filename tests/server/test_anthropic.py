"""Anthropic's Messages API with the official anthropic client: the same engine queue and tokens as the OpenAI
routes, streamed events, stop sequences, tool_use and tool_result blocks, errors in Anthropic's shape."""

import json
from dataclasses import replace

import pytest

from specchat.server.anthropic_stream import AnthropicEvents
from specchat.server.anthropic_wire import message_body, openai_body
from specchat.server.errors import ApiError

from .conftest import API_KEY, DEFAULTS, chat_ids, reference


@pytest.fixture
def claude(server):
    """The official Anthropic client pointed at the server."""
    from anthropic import Anthropic

    return Anthropic(base_url=server.url, api_key=API_KEY, max_retries=0, timeout=120)


def test_a_message_gets_the_engines_own_reply_with_usage(claude, host):
    reply = claude.messages.create(
        model="dense_target", max_tokens=12, system="Be brief.", messages=[{"role": "user", "content": "Hi"}]
    )
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    ids = chat_ids(host, messages)
    ref = reference(host, ids, replace(DEFAULTS, max_tokens=12))
    assert reply.type == "message" and reply.role == "assistant"
    assert [b.type for b in reply.content] == ["text"] and reply.content[0].text == ref.text
    assert reply.stop_reason == ("max_tokens" if ref.stats.stop_reason == "length" else "end_turn")
    assert reply.usage.input_tokens == len(ids) and reply.usage.output_tokens == len(ref.tokens)


def test_the_stream_is_anthropics_event_sequence_and_adds_up_to_the_whole_reply(claude):
    args = dict(model="dense_target", max_tokens=10, messages=[{"role": "user", "content": "Count"}])
    whole = claude.messages.create(**args)
    with claude.messages.stream(**args) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop" and "message_delta" in kinds
    assert "content_block_start" in kinds and "content_block_stop" in kinds
    assert final.content[0].text == whole.content[0].text
    assert final.usage.output_tokens == whole.usage.output_tokens and final.stop_reason == whole.stop_reason


def test_a_stop_sequence_ends_the_reply_and_is_named(claude):
    free = claude.messages.create(model="dense_target", max_tokens=16, messages=[{"role": "user", "content": "Go"}])
    text = free.content[0].text
    first = [i for i in range(2, len(text) - 1) if text.find(text[i : i + 2]) == i]
    assert first, text  # a two-character piece that first occurs after the start
    stop = text[first[0] : first[0] + 2]
    cut = claude.messages.create(
        model="dense_target", max_tokens=16, stop_sequences=[stop], messages=[{"role": "user", "content": "Go"}]
    )
    assert cut.stop_reason == "stop_sequence" and cut.stop_sequence == stop
    assert cut.content[0].text == text[: text.find(stop)]


def test_a_tool_conversation_is_accepted_and_reaches_the_template(claude, host):
    tools = [{"name": "get_weather", "description": "Weather in a city", "input_schema": {"type": "object"}}]
    history = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18 C, sunny"}]},
    ]
    reply = claude.messages.create(model="dense_target", max_tokens=6, tools=tools, messages=history)
    assert reply.content and reply.usage.input_tokens > 0
    counted = claude.messages.count_tokens(model="dense_target", tools=tools, messages=history)
    assert counted.input_tokens == reply.usage.input_tokens


def test_bad_requests_get_anthropics_error_shape(claude):
    from anthropic import BadRequestError

    with pytest.raises(BadRequestError) as missing:
        claude.messages.create(model="dense_target", max_tokens=4, messages=[])
    assert missing.value.body["type"] == "error" and "messages" in missing.value.body["error"]["message"]
    with pytest.raises(BadRequestError):
        claude.messages.create(
            model="dense_target", max_tokens=4, messages=[{"role": "user", "content": [{"type": "image"}]}]
        )


def test_the_translation_maps_blocks_tools_and_choices():
    body = openai_body(
        {
            "max_tokens": 8,
            "system": [{"type": "text", "text": "S"}],
            "messages": [
                {"role": "user", "content": "Q"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "R"}]},
            ],
            "tools": [{"name": "f", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any"},
            "stop_sequences": ["END"],
        }
    )
    assert body["messages"] == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "R"},
    ]
    assert body["tool_choice"] == "required" and body["stop"] == ["END"] and body["tools"][0]["function"]["name"] == "f"
    with pytest.raises(ApiError) as no_max:
        openai_body({"messages": [{"role": "user", "content": "x"}]})
    assert no_max.value.param == "max_tokens"


def test_openai_tool_calls_come_back_as_tool_use_blocks_whole_and_streamed():
    whole = {
        "choices": [
            {
                "message": {
                    "content": "Checking.",
                    "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": '{"city": "Oslo"}'}}],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 9},
    }
    message = message_body(whole, "m")
    assert message["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_c1", "name": "f", "input": {"city": "Oslo"}},  # Anthropic's id prefix
    ]
    assert message["stop_reason"] == "tool_use" and message["usage"] == {"input_tokens": 5, "output_tokens": 9}
    events = AnthropicEvents("m", 5)
    out = events.start()
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}
    for delta in (
        {"content": "Checking."},
        {"tool_calls": [call]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '"Oslo"}'}}]},
    ):
        out += events.chunk({"choices": [{"delta": delta, "finish_reason": None}]})
    out += events.chunk({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]})
    out += events.finish()
    names = [name for name, _ in out]
    assert names == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    partial = "".join(d["delta"]["partial_json"] for n, d in out if n == "content_block_delta" and d["index"] == 1)
    assert json.loads(partial) == {"city": "Oslo"} and out[-2][1]["delta"]["stop_reason"] == "tool_use"
