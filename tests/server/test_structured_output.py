"""Structured output through the server with the official openai client: response_format and forced tool calls
constrain the reply (even a random model answers schema-valid JSON), bad schemas and unapplied sampling
fields are 400s naming the field."""

import json

import openai
import pytest

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 12},
        "days": {"type": "integer", "minimum": 1, "maximum": 9},
        "sunny": {"type": "boolean"},
    },
    "required": ["city", "days", "sunny"],
    "additionalProperties": False,
}
FORMAT = {"type": "json_schema", "json_schema": {"name": "forecast", "schema": SCHEMA, "strict": True}}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 10}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
ASK = [{"role": "user", "content": "Forecast for Oslo as JSON."}]


def _valid(data: dict) -> None:
    assert set(data) == {"city", "days", "sunny"}
    assert isinstance(data["city"], str) and len(data["city"]) <= 12
    assert isinstance(data["days"], int) and 1 <= data["days"] <= 9 and isinstance(data["sunny"], bool)


@pytest.mark.parametrize("mode", ["baseline", "draft", "lookup"])
def test_a_json_schema_reply_follows_the_schema_whole_and_streamed(client, mode):
    extra = {"speculation": {"mode": mode, "num_draft_tokens": "auto"}}
    reply = client.chat.completions.create(
        model="dense_target", messages=ASK, response_format=FORMAT, max_tokens=80, extra_body=extra
    )
    _valid(json.loads(reply.choices[0].message.content))
    assert reply.choices[0].finish_reason == "stop"
    chunks = client.chat.completions.create(
        model="dense_target", messages=ASK, response_format=FORMAT, max_tokens=80, stream=True, extra_body=extra
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == reply.choices[0].message.content  # greedy: the same constrained reply


def test_completions_follow_a_response_format_too(client):
    reply = client.completions.create(
        model="dense_target", prompt="{", max_tokens=80, extra_body={"response_format": FORMAT}
    )
    _valid(json.loads(reply.choices[0].text))


def test_a_forced_tool_call_comes_back_as_tool_calls_with_valid_arguments(client):
    reply = client.chat.completions.create(
        model="dense_target",
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=[WEATHER],
        tool_choice="required",
        max_tokens=200,
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls" and len(choice.message.tool_calls) == 1
    call = choice.message.tool_calls[0]
    arguments = json.loads(call.function.arguments)
    assert call.function.name == "get_weather" and set(arguments) == {"city"} and len(arguments["city"]) <= 10


@pytest.mark.parametrize(
    "extra, param",
    [
        ({"response_format": {"type": "xml"}}, "response_format.type"),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "strin"}}}},
            "response_format.json_schema.schema",
        ),
        ({"presence_penalty": 0.5}, "presence_penalty"),
        ({"frequency_penalty": -1}, "frequency_penalty"),
        ({"logit_bias": {"17": 5}}, "logit_bias"),
        (
            {"response_format": {"type": "json_object"}, "tools": [WEATHER], "tool_choice": "required"},
            "response_format",
        ),
    ],
)
def test_what_cannot_be_applied_exactly_is_a_400_naming_it(client, extra, param):
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="dense_target", messages=ASK, max_tokens=4, extra_body=extra)
    assert refused.value.body["param"] == param


def test_neutral_penalties_are_accepted(client):
    reply = client.chat.completions.create(
        model="dense_target", messages=ASK, max_tokens=3, presence_penalty=0, frequency_penalty=0, logit_bias={}
    )
    assert reply.choices[0].message.content is not None


def test_a_repetition_penalty_is_refused_not_ignored(client):
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model="dense_target", messages=ASK, max_tokens=4, extra_body={"repetition_penalty": 1.2}
        )
    assert refused.value.body["param"] == "repetition_penalty" and "drafts" in refused.value.body["message"]


@pytest.mark.parametrize("mode", ["baseline", "draft"])
@pytest.mark.parametrize("prefill", ['{"city":"', '{"city":"Oslo","days":3'])
def test_a_response_format_goes_on_from_an_assistant_prefill(client, mode, prefill):
    extra = {"speculation": {"mode": mode, "num_draft_tokens": 3}}
    messages = [*ASK, {"role": "assistant", "content": prefill}]
    reply = client.chat.completions.create(
        model="dense_target", messages=messages, response_format=FORMAT, max_tokens=80, extra_body=extra
    )
    _valid(json.loads(prefill + reply.choices[0].message.content))  # was the schema again from its start


def test_a_prefill_the_format_cannot_continue_is_a_400(client):
    messages = [*ASK, {"role": "assistant", "content": "Sure! Here"}]
    with pytest.raises(openai.BadRequestError, match="prefill 'Sure! Here' does not follow its response format"):
        client.chat.completions.create(model="dense_target", messages=messages, response_format=FORMAT, max_tokens=8)
