"""OpenAI's Responses API with the official openai client: the engine's own tokens whole and streamed as typed
events, max_output_tokens, function tools and their outputs, structured output, previous_response_id, and
what is refused by name."""

import json
from dataclasses import replace

import openai
import pytest

from specchat.server.openai_responses import ResponseStore
from specchat.server.openai_responses_events import ResponsesEvents, assistant_message
from specchat.server.openai_responses_wire import input_messages

from .conftest import API_KEY, DEFAULTS, chat_ids, reference
from .test_structured_output import WEATHER as CHAT_WEATHER

SPECULATION = {"speculation": {"mode": "draft", "num_draft_tokens": 3}}
CFG = replace(DEFAULTS, mode="draft", num_draft_tokens=3)
WEATHER = {"type": "function", **CHAT_WEATHER["function"]}  # the Responses API's flat function tool
SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 12},
        "days": {"type": "integer", "minimum": 1, "maximum": 9},
    },
    "required": ["city", "days"],
    "additionalProperties": False,
}
ITEMS = [
    {"role": "developer", "content": [{"type": "input_text", "text": "Answer in one line."}]},
    {"role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello."}]},
    {"role": "user", "content": "Count to three"},
]
ITEMS_AS_CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "system", "content": "Answer in one line."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello."},
    {"role": "user", "content": "Count to three"},
]


def _streamed(client, **args):
    events = list(client.responses.create(stream=True, extra_body=SPECULATION, **args))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    return events


@pytest.mark.parametrize("given", ["Hi", ITEMS], ids=["string", "items"])
def test_text_whole_and_streamed_is_the_engines_own_reply(client, host, given):
    args = dict(model="dense_target", instructions="Be brief.", input=given, max_output_tokens=12)
    messages = ITEMS_AS_CHAT if given is ITEMS else [ITEMS_AS_CHAT[0], {"role": "user", "content": "Hi"}]
    ids = chat_ids(host, messages)
    ref = reference(host, ids, replace(CFG, max_tokens=12))
    whole = client.responses.create(extra_body=SPECULATION, **args)
    assert whole.id.startswith("resp_") and whole.object == "response" and whole.output_text == ref.text
    assert [item.type for item in whole.output] == ["message"] and whole.output[0].content[0].type == "output_text"
    assert whole.status == ("incomplete" if ref.stats.stop_reason == "length" else "completed")
    assert (whole.usage.input_tokens, whole.usage.output_tokens) == (len(ids), len(ref.tokens))
    assert whole.usage.total_tokens == len(ids) + len(ref.tokens)
    assert whole.usage.model_extra["speculation"]["mode"] == "draft"
    events = _streamed(client, **args)
    kinds = [e.type for e in events]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.incomplete" if whole.status == "incomplete" else "response.completed",
    ]
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == ref.text
    assert events[-4].text == ref.text and events[-1].response.output_text == ref.text
    assert events[-1].response.usage.output_tokens == len(ref.tokens)


def test_max_output_tokens_makes_the_response_incomplete(client, host):
    ids = chat_ids(host, [{"role": "user", "content": "Tell me a story"}])
    ref = reference(host, ids, replace(CFG, max_tokens=3))
    assert ref.stats.stop_reason == "length"  # the reply goes on past three tokens
    args = dict(model="dense_target", input="Tell me a story", max_output_tokens=3)
    whole = client.responses.create(extra_body=SPECULATION, **args)
    assert whole.status == "incomplete" and whole.incomplete_details.reason == "max_output_tokens"
    assert whole.output_text == ref.text and whole.output[0].status == "incomplete"
    last = _streamed(client, **args)[-1]
    assert last.type == "response.incomplete" and last.response.incomplete_details.reason == "max_output_tokens"


def test_a_forced_function_call_and_its_output_turn(client):
    forced = {"type": "function", "name": "get_weather"}
    args = dict(
        model="dense_target",
        input="Weather in Oslo?",
        tools=[WEATHER],
        tool_choice=forced,
        max_output_tokens=200,
        parallel_tool_calls=False,
    )
    first = client.responses.create(**args)
    assert first.status == "completed" and [item.type for item in first.output] == ["function_call"]
    call = first.output[0]
    arguments = json.loads(call.arguments)
    assert call.name == "get_weather" and call.call_id and set(arguments) == {"city"} and len(arguments["city"]) <= 10
    events = _streamed(client, **args)
    deltas = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert deltas == call.arguments and [e.arguments for e in done] == [call.arguments]
    result = {"type": "function_call_output", "call_id": call.call_id, "output": "18 C, sunny"}
    follow = client.responses.create(
        model="dense_target", previous_response_id=first.id, input=[result], tools=[WEATHER], max_output_tokens=6
    )
    items = [{"role": "user", "content": "Weather in Oslo?"}, call.model_dump(exclude_none=True), result]
    explicit = client.responses.create(model="dense_target", input=items, tools=[WEATHER], max_output_tokens=6)
    chat_call = {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
    chat = client.chat.completions.create(
        model="dense_target",
        messages=[
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": None, "tool_calls": [chat_call]},
            {"role": "tool", "tool_call_id": call.call_id, "content": "18 C, sunny"},
        ],
        tools=[{"type": "function", "function": {k: v for k, v in WEATHER.items() if k != "type"}}],
        max_tokens=6,
    )
    for reply in (follow, explicit):
        assert reply.usage.input_tokens == chat.usage.prompt_tokens
        assert reply.output_text == (chat.choices[0].message.content or "")


@pytest.mark.parametrize(
    "fmt",
    [{"type": "json_schema", "name": "forecast", "schema": SCHEMA, "strict": True}, {"type": "json_object"}],
    ids=["json_schema", "json_object"],
)
def test_structured_output_follows_the_format(client, fmt):
    reply = client.responses.create(
        model="dense_target", input="Forecast for Oslo as JSON.", text={"format": fmt}, max_output_tokens=80
    )
    data = json.loads(reply.output_text)
    assert isinstance(data, dict) and reply.status == "completed"
    if fmt["type"] == "json_schema":
        assert set(data) == {"city", "days"} and isinstance(data["days"], int) and 1 <= data["days"] <= 9


def test_previous_response_id_continues_the_conversation(client, host):
    first = client.responses.create(model="dense_target", input="Hi", max_output_tokens=6, extra_body=SPECULATION)
    second = client.responses.create(
        model="dense_target",
        previous_response_id=first.id,
        input="And then?",
        max_output_tokens=6,
        extra_body=SPECULATION,
    )
    turn = [{"role": "user", "content": "Hi"}]
    conversation = [
        *turn,
        {"role": "assistant", "content": first.output_text},
        {"role": "user", "content": "And then?"},
    ]
    first_ids, ids = chat_ids(host, turn), chat_ids(host, conversation)
    assert ids[: len(first_ids)] == first_ids and first.usage.input_tokens == len(first_ids)
    assert second.usage.input_tokens == len(ids) and second.previous_response_id == first.id
    assert second.output_text == reference(host, ids, replace(CFG, max_tokens=6)).text


def test_unknown_and_unstored_previous_responses_are_404s(client):
    unstored = client.responses.create(model="dense_target", input="Hi", max_output_tokens=2, store=False)
    for response_id in ("resp_nope", unstored.id):
        with pytest.raises(openai.NotFoundError) as missing:
            client.responses.create(model="dense_target", previous_response_id=response_id, input="x")
        assert missing.value.body["param"] == "previous_response_id" and response_id in missing.value.body["message"]


@pytest.mark.parametrize(
    "extra, param",
    [
        ({"reasoning": {"effort": "high"}}, "reasoning"),
        ({"background": True}, "background"),
        ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"include": ["reasoning.encrypted_content"]}, "include"),
        ({"truncation": "auto"}, "truncation"),
        ({"text": {"format": {"type": "xml"}}}, "text.format.type"),
        ({"presence_penalty": 0.5}, "presence_penalty"),
        ({"max_output_tokens": -1}, "max_output_tokens"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
            "input[0].content[0].type",
        ),
    ],
)
def test_what_cannot_be_applied_is_a_400_naming_it(client, extra, param):
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="dense_target", input="Hi", max_output_tokens=4, extra_body=extra)
    assert refused.value.body["param"] == param


def test_function_calls_in_a_row_are_one_assistant_turn():
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    messages = input_messages(
        [
            {"role": "assistant", "content": "Looking."},
            call,
            {**call, "call_id": "c2"},
            {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "R"}]},
        ]
    )
    assert [m["role"] for m in messages] == ["assistant", "tool"]
    assert messages[0]["content"] == "Looking." and [c["id"] for c in messages[0]["tool_calls"]] == ["c1", "c2"]
    assert messages[1] == {"role": "tool", "tool_call_id": "c1", "content": "R"}


def test_the_store_keeps_the_newest_and_a_follow_up_keeps_only_what_it_added():
    store = ResponseStore(size=2)
    first = [{"role": "user", "content": "1"}, {"role": "assistant", "content": "2"}]
    second = [*first, {"role": "user", "content": "3"}, {"role": "assistant", "content": "4"}]
    third = [*second, {"role": "user", "content": "5"}, {"role": "assistant", "content": "6"}]
    store.put("r1", first)
    store.put("r2", second, "r1")
    store.put("r3", third, "r2")
    assert store.get("r1") is None and store.get("r2") == second and store.get("r3") == third
    assert store.get("r3")[0] is first[0]  # reached through r2's parent, not copied into r3
    store.put("r4", [{"role": "user", "content": "7"}], "r1")  # its parent is gone: kept whole
    assert store.get("r4") == [{"role": "user", "content": "7"}]


def test_text_then_a_call_are_two_output_items_in_order():
    events = ResponsesEvents("m", {})
    out = events.start()
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}
    for delta in (
        {"content": "Checking."},
        {"tool_calls": [call]},
        {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]},
    ):
        out += events.chunk({"choices": [{"delta": delta, "finish_reason": None}]})
    out += events.chunk({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]})
    out += events.finish()
    assert [(e["type"], e.get("output_index")) for e in out] == [
        ("response.created", None),
        ("response.in_progress", None),
        ("response.output_item.added", 0),
        ("response.content_part.added", 0),
        ("response.output_text.delta", 0),
        ("response.output_text.done", 0),
        ("response.content_part.done", 0),
        ("response.output_item.done", 0),
        ("response.output_item.added", 1),
        ("response.function_call_arguments.delta", 1),
        ("response.function_call_arguments.done", 1),
        ("response.output_item.done", 1),
        ("response.completed", None),
    ]
    final = out[-1]["response"]
    assert [item["type"] for item in final["output"]] == ["message", "function_call"] and final["status"] == "completed"
    assert final["output"][1] | {"id": None} == {
        "id": None,
        "type": "function_call",
        "status": "completed",
        "call_id": "c1",
        "name": "f",
        "arguments": "{}",
    }
    assert assistant_message(final["output"]) == {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    }


def test_each_server_sent_event_is_named_by_its_type(server):
    import httpx

    body = {"model": "dense_target", "input": "Hi", "max_output_tokens": 4, "stream": True}
    headers = {"Authorization": f"Bearer {API_KEY}"}
    answer = httpx.post(server.url + "/v1/responses", json=body, headers=headers, timeout=120)
    blocks = [b for b in answer.text.replace("\r\n", "\n").split("\n\n") if b.strip() and not b.startswith(":")]
    named = [dict(line.split(": ", 1) for line in block.split("\n")) for block in blocks]
    assert answer.headers["content-type"].startswith("text/event-stream") and len(named) > 5
    assert all(json.loads(event["data"])["type"] == event["event"] for event in named)
