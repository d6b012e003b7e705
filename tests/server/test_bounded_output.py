"""Forced tool calls and JSON response formats end within max_tokens: the schema handed to llguidance closes
objects to their properties (no extra or repeated keys), bounds strings, arrays and integers, and a call that
max_tokens still cuts is finish_reason "length", never raw <tool_call> text."""

import json

import pytest

from specchat.server.schema_bounds import bounded_schema, worst_case

NOTE = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "count": {"type": "integer"},
    },
    "required": ["title"],
}
TOOL = {"type": "function", "function": {"name": "save_note", "parameters": NOTE}}
ASK = [{"role": "user", "content": "Save a note about foxes."}]


@pytest.mark.parametrize("mode", ["baseline", "draft"])
@pytest.mark.parametrize("max_tokens", [120, 200])
def test_a_forced_call_on_an_open_schema_ends_with_only_its_properties(client, mode, max_tokens):
    for stream in (False, True):
        args = dict(
            model="dense_target",
            messages=ASK,
            tools=[TOOL],
            tool_choice={"type": "function", "function": {"name": "save_note"}},
            max_tokens=max_tokens,
            extra_body={"speculation": {"mode": mode}},
        )
        if stream:
            reason, arguments = None, ""
            for chunk in client.chat.completions.create(**args, stream=True):
                for call in chunk.choices[0].delta.tool_calls or []:
                    arguments += call.function.arguments or ""
                reason = chunk.choices[0].finish_reason or reason
        else:
            reply = client.chat.completions.create(**args)
            reason = reply.choices[0].finish_reason
            arguments = reply.choices[0].message.tool_calls[0].function.arguments
        assert reason == "tool_calls", (stream, arguments)
        data = json.loads(arguments)
        assert "title" in data and set(data) <= {"title", "tags", "count"}


def test_a_call_that_max_tokens_cuts_is_length_and_never_raw_call_text(client):
    args = dict(model="dense_target", messages=ASK, tools=[TOOL], tool_choice="required", max_tokens=10)
    reply = client.chat.completions.create(**args)
    choice = reply.choices[0]
    assert choice.finish_reason == "length" and not choice.message.tool_calls
    assert not choice.message.content  # the cut <tool_call> block is not sent as text
    chunks = list(client.chat.completions.create(**args, stream=True))
    assert chunks[-1].choices[0].finish_reason == "length"
    assert not "".join(c.choices[0].delta.content or "" for c in chunks)
    assert not any(c.choices[0].delta.tool_calls for c in chunks)


@pytest.mark.parametrize("fmt", [{"type": "json_object"}, {"type": "json_object", "schema": NOTE}])
@pytest.mark.parametrize("max_tokens", [48, 100])
def test_a_json_format_closes_within_max_tokens(client, fmt, max_tokens):
    reply = client.chat.completions.create(
        model="dense_target", messages=ASK, max_tokens=max_tokens, extra_body={"response_format": fmt}
    )
    assert reply.choices[0].finish_reason == "stop", reply.choices[0].message.content
    data = json.loads(reply.choices[0].message.content)
    assert isinstance(data, dict) and reply.usage.completion_tokens <= max_tokens
    if "schema" in fmt:
        assert set(data) <= {"title", "tags", "count"}


def test_the_bounded_schema_closes_objects_and_bounds_what_the_schema_left_open():
    out = bounded_schema(NOTE, 100, closed=True)
    assert out["additionalProperties"] is False and NOTE.get("additionalProperties") is None  # a copy
    title, tags, count = (out["properties"][k] for k in ("title", "tags", "count"))
    assert 1 <= title["maxLength"] and 1 <= tags["maxItems"] and tags["items"]["maxLength"] >= 1
    assert count["minimum"] < 0 < count["maximum"] and worst_case(out, out) <= 100
    assert bounded_schema(NOTE, 10_000, closed=True)["properties"]["title"]["maxLength"] > title["maxLength"]
    kept = {"type": "string", "maxLength": 3000, "format": "email"}
    assert bounded_schema({"type": "object", "properties": {"a": kept}}, 50)["properties"]["a"] == kept
    explicit = bounded_schema({"type": "object", "additionalProperties": {"type": "integer"}}, 200)
    assert explicit["additionalProperties"] is False and explicit["maxProperties"] >= 1  # keys bounded, not closed
    assert list(explicit["patternProperties"].values())[0]["maximum"] > 0


@pytest.fixture(scope="module")
def matcher(host):
    from specchat.engine.grammar import ll_tokenizer, new_matcher

    tokenizer = host.engine.tokenizer
    ll = ll_tokenizer(tokenizer, host.engine.vocab_limit, {tokenizer.eos_token_id})

    def accepts(grammar, text):
        m = new_matcher(grammar, ll)
        ids = tokenizer.encode(text)
        return m.validate_tokens(ids) == len(ids) and m.consume_tokens(ids) and m.is_accepting()

    return accepts


def test_the_forced_call_grammar_takes_no_repeated_or_extra_keys_and_parallel_calls(matcher):
    from specchat.server.structured import tool_call_grammar

    def call(arguments):
        return '<tool_call>\n{"name": "save_note", "arguments": ' + arguments + "}\n</tool_call>"

    grammar = tool_call_grammar([TOOL], "required", 300, parallel=True)
    assert matcher(grammar, call('{"title": "a"}'))
    assert not matcher(grammar, call('{"title": "a", "title": "b"}'))
    assert not matcher(grammar, call('{"title": "a", "extra": 1}'))
    assert matcher(grammar, call('{"title": "a"}') + "\n" + call('{"title": "b", "count": 2}'))
    single = tool_call_grammar([TOOL], "required", 300, parallel=False)
    assert matcher(single, call('{"title": "a"}'))
    assert not matcher(single, call('{"title": "a"}') + "\n" + call('{"title": "b"}'))


def test_refs_and_all_of_keep_working_once_bounded(matcher):
    from specchat.server.structured import response_format_grammar, tool_call_grammar

    point = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    params = {"type": "object", "properties": {"at": {"$ref": "#/$defs/point"}}, "$defs": {"point": point}}
    tool = {"type": "function", "function": {"name": "go", "parameters": params}}
    grammar = tool_call_grammar([tool], "required", 200)
    assert matcher(grammar, '<tool_call>\n{"name": "go", "arguments": {"at": {"x": 3}}}\n</tool_call>')
    assert not matcher(grammar, '<tool_call>\n{"name": "go", "arguments": {"at": {"x": 3, "y": 1}}}\n</tool_call>')
    both = {"allOf": [point, {"type": "object", "properties": {"y": {"type": "integer"}}}]}
    fmt = response_format_grammar({"type": "json_object", "schema": both}, 100)
    assert matcher(fmt, '{"x":1,"y":2}')  # allOf branches are not closed against each other
