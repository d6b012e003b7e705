"""What a client sends is applied or refused with a 400 naming it, never ignored: the stream's role chunk,
llama.cpp's json_object schema, the completions fields SpecChat cannot apply, Anthropic's thinking and
output_config, tools' schemas checked whatever tool_choice is, with the official clients."""

import json

import anthropic
import httpx
import openai
import pytest

from specchat.server.anthropic_route import count_tokens
from specchat.server.anthropic_wire import openai_body
from specchat.server.errors import ApiError

from .conftest import API_KEY, DEFAULTS

ASK = [{"role": "user", "content": "Weather in Oslo?"}]
CITY = {
    "type": "object",
    "properties": {"city": {"type": "string", "enum": ["Oslo", "Paris", "Tokyo"]}, "days": {"type": "integer"}},
    "required": ["city", "days"],
}


@pytest.fixture
def claude(server):
    return anthropic.Anthropic(base_url=server.url, api_key=API_KEY, max_retries=0, timeout=120)


def _sse_bodies(server, body):
    """The JSON bodies of a streamed chat, as sent on the wire."""
    headers = {"Authorization": f"Bearer {API_KEY}"}
    with httpx.stream("POST", server.url + "/v1/chat/completions", json=body, headers=headers, timeout=120) as r:
        lines = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


def test_the_first_streamed_chunk_carries_the_role_alone_then_the_text(server, client):
    chunks = _sse_bodies(server, {"messages": ASK, "max_tokens": 8, "stream": True})
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    rest = [c["choices"][0]["delta"] for c in chunks[1:]]
    assert all("role" not in delta for delta in rest) and any(delta.get("content") for delta in rest)
    whole = client.chat.completions.create(model="dense_target", messages=ASK, max_tokens=8)
    assert "".join(delta.get("content") or "" for delta in rest) == whole.choices[0].message.content
    logged = _sse_bodies(server, {"messages": ASK, "max_tokens": 4, "stream": True, "logprobs": True})
    assert logged[0]["choices"][0]["logprobs"] is None  # the role chunk has no tokens behind it
    tokens = [t for c in logged[1:] for t in ((c["choices"] or [{}])[0].get("logprobs") or {}).get("content", [])]
    assert len(tokens) == 4


def test_json_object_with_a_schema_follows_the_schema(client):
    # llama.cpp's extension: {"type": "json_object", "schema": {...}}
    fmt = {"type": "json_object", "schema": CITY}
    reply = client.chat.completions.create(
        model="dense_target", messages=ASK, max_tokens=60, extra_body={"response_format": fmt}
    )
    data = json.loads(reply.choices[0].message.content)
    assert set(data) == {"city", "days"} and data["city"] in ("Oslo", "Paris", "Tokyo")
    assert isinstance(data["days"], int)
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model="dense_target",
            messages=ASK,
            max_tokens=4,
            extra_body={"response_format": {"type": "json_object", "schema": {"type": "wizard"}}},
        )
    assert refused.value.body["param"] == "response_format.schema"


@pytest.mark.parametrize("field, value", [("echo", True), ("suffix", "tail"), ("best_of", 2), ("echo", 1)])
def test_completion_fields_that_cannot_be_applied_are_refused_by_name(client, field, value):
    with pytest.raises(openai.BadRequestError) as refused:
        client.completions.create(model="dense_target", prompt="Hi", max_tokens=2, extra_body={field: value})
    assert refused.value.body["param"] == field and "not supported" in refused.value.body["message"]


def test_neutral_completion_fields_are_accepted(client):
    reply = client.completions.create(model="dense_target", prompt="Hi", max_tokens=2, echo=False, suffix="", best_of=1)
    assert reply.choices[0].text


WIZARD = {"type": "object", "properties": {"x": {"type": "wizard"}}}
DANGLING = {"type": "object", "properties": {"x": {"$ref": "#/$defs/nowhere"}}}


@pytest.mark.parametrize("parameters", [WIZARD, DANGLING])
@pytest.mark.parametrize("choice", [None, "auto", "none", "required"])
def test_every_tools_schema_is_checked_whatever_tool_choice_is(client, parameters, choice):
    good = {"type": "function", "function": {"name": "ok", "parameters": CITY}}
    bad = {"type": "function", "function": {"name": "bad", "parameters": parameters}}
    extra = {"tool_choice": choice} if choice else {}
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model="dense_target", messages=ASK, max_tokens=2, tools=[good, bad], extra_body=extra
        )
    assert refused.value.body["param"] == "tools[1].function.parameters"


def test_anthropic_output_config_and_tools_without_input_schema_are_refused_by_name(claude):
    base = dict(model="dense_target", max_tokens=4, messages=[{"role": "user", "content": "Hi"}])
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(**base, extra_body={"output_config": {"effort": "low"}})
    assert "output_config" in refused.value.body["error"]["message"]
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(**base, tools=[{"name": "web_search", "type": "web_search_20250305"}])
    assert "tools[0].input_schema" in refused.value.body["error"]["message"]


def test_anthropic_thinking_switches_the_templates_enable_thinking(claude, host):
    base = dict(model="dense_target", messages=[{"role": "user", "content": "Hi"}])
    on = claude.messages.count_tokens(**base, thinking={"type": "enabled", "budget_tokens": 1024}).input_tokens
    off = claude.messages.count_tokens(**base, thinking={"type": "disabled"}).input_tokens
    plain = claude.messages.count_tokens(**base).input_tokens
    assert off > on == plain  # the fixture's template closes an empty think block when thinking is off
    reply = claude.messages.create(**base, max_tokens=3, thinking={"type": "disabled"})
    assert reply.usage.input_tokens == off
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(**base, max_tokens=3, thinking={"type": "sometimes"})
    assert "thinking.type" in refused.value.body["error"]["message"]


class _NoSwitch:
    """A backend whose template renders the same prompt whatever enable_thinking is."""

    def models(self):
        return ["m"]

    def prompt_ids(self, req):
        return [1, 2, 3]


def test_thinking_is_refused_where_the_template_has_no_switch():
    body = {"messages": [{"role": "user", "content": "Hi"}], "thinking": {"type": "enabled", "budget_tokens": 9}}
    answer = count_tokens(body, _NoSwitch(), DEFAULTS)
    assert answer.status_code == 400 and "enable_thinking" in json.loads(answer.body)["error"]["message"]
    assert count_tokens({**body, "thinking": None}, _NoSwitch(), DEFAULTS).status_code == 200


def test_anthropic_disable_parallel_tool_use_is_parallel_tool_calls_false():
    tool = {"name": "f", "input_schema": {"type": "object"}}
    body = {"max_tokens": 4, "messages": [{"role": "user", "content": "x"}], "tools": [tool]}
    choice = {"type": "any", "disable_parallel_tool_use": True}
    assert openai_body({**body, "tool_choice": choice})["parallel_tool_calls"] is False
    assert "parallel_tool_calls" not in openai_body({**body, "tool_choice": {"type": "any"}})
    with pytest.raises(ApiError) as refused:
        openai_body({**body, "tools": [{"name": "f"}]})
    assert refused.value.param == "tools[0].input_schema"
