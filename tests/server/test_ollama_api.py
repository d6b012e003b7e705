"""Ollama's API with the official ollama client: the same engine queue and tokens as the OpenAI routes, NDJSON
streams, format schemas, tool calls with object arguments, options refused by name, errors in Ollama's shape."""

import json
from dataclasses import replace

import pytest

from specchat.server.errors import ApiError
from specchat.server.ollama_options import Served, openai_options
from specchat.server.ollama_reply import OllamaReply, ThinkSplitter, whole
from specchat.server.ollama_wire import chat_body, generate_body
from specchat.server.responses import ResponseShape, StreamedChoice
from specchat.server.tools import ToolCallParser

from .conftest import API_KEY, DEFAULTS, chat_ids, reference

MODEL = "dense_target"
HI = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]


@pytest.fixture
def llama(server):
    """The official Ollama client pointed at the server, with its key."""
    import ollama

    return ollama.Client(host=server.url, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=120)


def test_version_tags_ps_and_show_describe_the_loaded_model(llama, host):
    import ollama

    assert llama._client.get("/api/version").json()["version"]
    listed = llama.list().models
    assert [m.model for m in listed] == [MODEL + ":latest"]
    entry = listed[0]
    assert entry.size > 0 and len(entry.digest) == 64
    assert entry.details.family == "qwen3" and entry.details.format == "safetensors"
    assert entry.details.quantization_level == "F32" and entry.details.parameter_size
    shown = llama.show(MODEL)
    assert shown.modelinfo["general.architecture"] == "qwen3" and shown.modelinfo["qwen3.context_length"] == 32768
    assert shown.modelinfo["qwen3.block_count"] == 2 and shown.template == host.engine.tokenizer.chat_template
    assert "thinking" in (shown.capabilities or []) and "max_tokens 24" in shown.parameters
    assert [m.model for m in llama.ps().models] == [MODEL + ":latest"]
    with pytest.raises(ollama.ResponseError) as missing:
        llama.show("llama3")
    assert missing.value.status_code == 404 and "llama3" in missing.value.error


def test_a_chat_gets_the_engines_own_reply_whole_and_streamed(llama, host):
    ids = chat_ids(host, HI)
    ref = reference(host, ids, DEFAULTS)
    reply = llama.chat(MODEL, messages=HI, stream=False)
    assert reply.message.role == "assistant" and reply.message.content == ref.text and reply.done
    assert reply.prompt_eval_count == len(ids) and reply.eval_count == len(ref.tokens)
    assert reply.done_reason == ("length" if ref.stats.stop_reason == "length" else "stop")
    assert reply.total_duration > 0 and reply.load_duration == 0
    parts = list(llama.chat(MODEL + ":latest", messages=HI, stream=True))
    assert [p.done for p in parts].count(True) == 1 and parts[-1].done
    assert "".join(p.message.content for p in parts) == ref.text and len(parts) > 2
    assert parts[-1].eval_count == len(ref.tokens) and parts[-1].done_reason == reply.done_reason


def test_stream_is_the_default_and_comes_as_ndjson(llama):
    raw = llama._client.post("/api/chat", json={"model": MODEL, "messages": HI})
    assert raw.status_code == 200 and raw.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in raw.text.splitlines()]
    assert lines[-1]["done"] is True and not any(line["done"] for line in lines[:-1])


def test_generate_runs_the_prompt_through_the_template_and_raw_as_is(llama, host):
    ids = chat_ids(host, HI)
    ref = reference(host, ids, DEFAULTS)
    reply = llama.generate(MODEL, prompt="Hi", system="Be brief.")
    assert reply.response == ref.text and reply.prompt_eval_count == len(ids)
    streamed = list(llama.generate(MODEL, prompt="Hi", system="Be brief.", stream=True))
    assert "".join(p.response for p in streamed) == ref.text and streamed[-1].done
    raw_ids = list(host.engine.tokenizer.encode("Once upon"))
    raw_ref = reference(host, raw_ids, DEFAULTS)
    raw = llama.generate(MODEL, prompt="Once upon", raw=True)
    assert raw.response == raw_ref.text and raw.prompt_eval_count == len(raw_ids)


def test_an_empty_request_only_loads(llama):
    assert llama.generate(MODEL).done_reason == "load"
    assert llama.chat(MODEL, messages=[]).done_reason == "load"


def test_num_predict_ends_with_length_and_seeded_sampling_repeats(llama):
    reply = llama.chat(MODEL, messages=HI, options={"num_predict": 3, "temperature": 0})
    assert reply.done_reason == "length" and reply.eval_count == 3
    sampled = dict(num_predict=8, temperature=0.9, top_k=20, top_p=0.9, min_p=0.05, seed=7, num_ctx=4096)
    first = llama.chat(MODEL, messages=HI, options=sampled)
    assert llama.chat(MODEL, messages=HI, options=sampled).message.content == first.message.content


def test_a_schema_format_gives_json_of_that_schema(llama):
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 8}, "n": {"type": "integer"}},
        "required": ["city", "n"],
        "additionalProperties": False,
    }
    reply = llama.chat(MODEL, messages=HI, format=schema, options={"num_predict": 64})
    value = json.loads(reply.message.content)
    assert set(value) == {"city", "n"} and isinstance(value["city"], str) and isinstance(value["n"], int)
    assert isinstance(
        json.loads(llama.generate(MODEL, prompt="Hi", format="json", options={"num_predict": 64}).response), dict
    )


def test_a_chat_with_tools_and_tool_results_reaches_the_template(llama, host):
    tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
    history = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
        },
        {"role": "tool", "content": "18 C, sunny", "tool_name": "get_weather"},
    ]
    reply = llama.chat(MODEL, messages=history, tools=[tool], options={"num_predict": 6})
    assert reply.done and reply.prompt_eval_count > len(chat_ids(host, [history[0]]))


def test_a_tool_call_in_the_reply_comes_back_with_object_arguments():
    text = 'Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    choice = StreamedChoice(ResponseShape("chat", MODEL), ToolCallParser())
    reply = OllamaReply("chat", MODEL, 5, 0)
    chunks = choice.feed(text[:20]) + choice.feed(text[20:]) + choice.finish()
    lines = [line for chunk in chunks for line in reply.chunk(chunk)] + reply.finish()
    message = whole(lines)["message"]
    assert message["content"] == "Sure."
    assert [c["function"] for c in message["tool_calls"]] == [
        {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}
    ]


def test_the_translation_maps_messages_tools_format_and_options():
    body = chat_body(
        {
            "model": MODEL,
            "messages": [
                {"role": "user", "content": "Q"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}],
                },
                {"role": "tool", "content": "R", "tool_name": "f"},
            ],
            "format": "json",
            "think": False,
            "keep_alive": "5m",
            "options": {"num_predict": 5, "stop": ["END"], "num_thread": 4, "repeat_penalty": 1.0},
        },
        Served(True, 100),
    )
    assert body["messages"][1]["tool_calls"] == [
        {"id": "call_1_0", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    ]
    assert body["messages"][2] == {"role": "tool", "content": "R", "tool_call_id": "call_1_0", "name": "f"}
    assert body["response_format"] == {"type": "json_object"} and body["stream"] is True
    assert (
        body["max_tokens"] == 5
        and body["stop"] == ["END"]
        and body["chat_template_kwargs"] == {"enable_thinking": False}
    )
    kind, gen = generate_body({"prompt": "P", "system": "S", "stream": False}, Served())
    assert kind == "chat" and gen["messages"] == [{"role": "system", "content": "S"}, {"role": "user", "content": "P"}]
    assert openai_options({"num_predict": -1}, Served())["max_tokens"] == 32768


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"repeat_penalty": 1.1}, "repeat_penalty"),
        ({"mirostat": 2}, "mirostat"),
        ({"presence_penalty": 0.5}, "presence_penalty"),
        ({"num_ctx": 10**6}, "num_ctx"),
        ({"flash": 1}, "flash"),
    ],
)
def test_an_option_that_cannot_be_applied_is_a_400_naming_it(llama, options, named):
    import ollama

    with pytest.raises(ollama.ResponseError) as refused:
        llama.chat(MODEL, messages=HI, options=options)
    assert refused.value.status_code == 400 and named in refused.value.error


def test_refused_fields_and_errors_come_in_ollamas_shape(llama, server):
    import ollama

    for call in (
        lambda: llama.chat(MODEL, messages=[{"role": "user", "content": "x", "images": ["aGk="]}]),
        lambda: llama.generate(MODEL, prompt="x", context=[1, 2]),
        lambda: llama.chat(MODEL, messages=HI, think="high"),
    ):
        with pytest.raises(ollama.ResponseError) as refused:
            call()
        assert refused.value.status_code == 400
    with pytest.raises(ollama.ResponseError) as unknown:
        llama.chat("llama3", messages=HI)
    assert unknown.value.status_code == 404
    with pytest.raises(ollama.ResponseError) as no_key:
        ollama.Client(host=server.url).list()
    assert no_key.value.status_code == 401 and "API key" in no_key.value.error


def test_think_sets_the_templates_switch(llama, host):
    tokenizer = host.engine.tokenizer
    on = list(tokenizer.apply_chat_template(HI, add_generation_prompt=True, enable_thinking=True))
    off = list(tokenizer.apply_chat_template(HI, add_generation_prompt=True, enable_thinking=False))
    assert on != off
    assert llama.chat(MODEL, messages=HI, think=True, options={"num_predict": 1}).prompt_eval_count == len(on)
    assert llama.chat(MODEL, messages=HI, think=False, options={"num_predict": 1}).prompt_eval_count == len(off)


def test_speculation_in_the_body_applies(llama, host):
    ids = chat_ids(host, HI)
    ref = reference(host, ids, replace(DEFAULTS, mode="baseline"))
    raw = llama._client.post(
        "/api/chat", json={"model": MODEL, "messages": HI, "stream": False, "speculation": {"mode": "baseline"}}
    ).json()
    assert raw["message"]["content"] == ref.text
    bad = llama._client.post("/api/chat", json={"model": MODEL, "messages": HI, "speculation": {"mode": "x"}})
    assert bad.status_code == 400 and "speculation.mode" in bad.json()["error"]
    with pytest.raises(ApiError):
        chat_body({"messages": HI, "format": 3}, Served())


@pytest.mark.parametrize(
    ("text", "opened", "split"),
    [
        ("<think>\nLet me see.\n</think>\n\nParis.", False, ("Let me see.\n", "Paris.")),
        ("Let me see.</think>Answer </think>", True, ("Let me see.", "Answer </think>")),
        ("<this is no tag", False, ("", "<this is no tag")),
        ("<think>unfinished", False, ("unfinished", "")),
    ],
)
def test_thinking_is_split_off_the_answer_however_the_text_is_cut(text, opened, split):
    for size in range(1, len(text) + 1):
        splitter = ThinkSplitter(opened)
        parts = [splitter.feed(text[i : i + size]) for i in range(0, len(text), size)] + [splitter.flush()]
        assert ("".join(p[0] for p in parts), "".join(p[1] for p in parts)) == split, size


def test_a_thinking_chat_carries_the_engines_text_split(llama, host):
    ids = list(host.engine.tokenizer.apply_chat_template(HI, add_generation_prompt=True, enable_thinking=True))
    ref = reference(host, ids, DEFAULTS)
    splitter = ThinkSplitter(host.engine.tokenizer.decode(ids[-4:]).rstrip().endswith("<think>"))
    expected = [splitter.feed(ref.text), splitter.flush()]
    reply = llama.chat(MODEL, messages=HI, think=True).message
    assert (reply.thinking or "", reply.content) == (expected[0][0] + expected[1][0], expected[0][1] + expected[1][1])
    streamed = list(llama.chat(MODEL, messages=HI, think=True, stream=True))
    assert "".join(p.message.content for p in streamed) == reply.content
    assert "".join(p.message.thinking or "" for p in streamed) == (reply.thinking or "")
