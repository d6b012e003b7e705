"""OpenAI-protocol cases ported from mlx-lm's tests/test_server.py and llama.cpp's tools/server/tests/unit,
run against the real server on the tiny fixtures; each case names where it comes from. The models differ,
so a case checks the protocol (fields, counts, finish reasons, errors), with exact text from a local run."""

import json
from dataclasses import replace

import httpx
import openai
import pytest

from .conftest import API_KEY, DEFAULTS, chat_ids, reference

BOOK = [{"role": "system", "content": "Book"}, {"role": "user", "content": "What is the best book"}]
HELLO = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "Hello!"}]
TEST_TOOL = {
    "type": "function",
    "function": {
        "name": "test",
        "description": "",
        "parameters": {
            "type": "object",
            "properties": {"success": {"type": "boolean", "const": True}},
            "required": ["success"],
        },
    },
}


def post(server, path, body, stream=False):
    headers = {"Authorization": f"Bearer {API_KEY}"}
    if not stream:
        return httpx.post(server.url + path, json=body, timeout=120, headers=headers)
    with httpx.stream("POST", server.url + path, json=body, timeout=120, headers=headers) as response:
        assert response.status_code == 200
        lines = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


# mlx-lm tests/test_server.py: test_handle_completions
@pytest.mark.slow
def test_a_seeded_completion_is_the_same_twice(server):
    body = {
        "model": "dense_target",
        "prompt": "Once upon a time",
        "max_tokens": 10,
        "temperature": 0.5,
        "top_p": 0.9,
        # mlx-lm's case also sends repetition_penalty 1.1: SpecChat refuses penalties it cannot apply to drafts and
        # target alike (tests/server/test_structured_output.py), so the port leaves it out
        "repetition_context_size": 20,
        "seed": 999,
        "stop": "stop sequence",
    }
    first = post(server, "/v1/completions", body).json()
    assert "id" in first and "choices" in first
    assert first["choices"][0]["text"] == post(server, "/v1/completions", body).json()["choices"][0]["text"]


# mlx-lm tests/test_server.py: test_handle_chat_completions, test_handle_chat_completions_with_content_fragments
@pytest.mark.parametrize(
    "messages",
    [
        HELLO,
        [
            {"role": "system", "content": [{"type": "text", "text": "You are a helpful assistant."}]},
            {"role": "user", "content": [{"type": "text", "text": "Hello!"}]},
        ],
    ],
)
def test_a_chat_completion_has_an_id_and_choices(server, messages):
    body = {"model": "dense_target", "max_tokens": 10, "temperature": 0.7, "top_p": 0.85, "messages": messages}
    answer = post(server, "/v1/chat/completions", body)  # mlx-lm's repetition_penalty 1.2 left out (refused here)
    assert answer.status_code == 200
    assert "id" in answer.json() and "choices" in answer.json()


# mlx-lm tests/test_server.py: test_handle_chat_completions_with_null_tool_content
def test_an_assistant_tool_call_with_null_content_and_its_result_are_accepted(server):
    body = {
        "model": "dense_target",
        "max_tokens": 10,
        "temperature": 0.7,
        "top_p": 0.85,  # mlx-lm's repetition_penalty 1.2 left out (refused here)
        "messages": [
            {"role": "user", "content": "what is 2+3?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"type": "function", "id": "123", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
                ],
            },
            {"role": "tool", "content": "5", "tool_call_id": "123"},
        ],
    }
    answer = post(server, "/v1/chat/completions", body)
    assert answer.status_code == 200 and "id" in answer.json() and "choices" in answer.json()


# mlx-lm tests/test_server.py: test_handle_models; llama.cpp test_basic.py: test_server_models
def test_the_model_list(client, server):
    body = httpx.get(server.url + "/v1/models", headers={"Authorization": f"Bearer {API_KEY}"}, timeout=30).json()
    assert body["object"] == "list" and isinstance(body["data"], list) and len(body["data"]) == 1
    model = body["data"][0]
    assert model["id"] == "dense_target" and model["object"] == "model" and "created" in model
    assert [m.id for m in client.models.list().data] == ["dense_target"]


# mlx-lm tests/test_server.py: test_handle_completions_with_draft_model, test_handle_chat_completions_with_draft_model
def test_speculative_replies_report_usage(server):
    done = post(server, "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 10, "temperature": 0.0})
    chat = post(server, "/v1/chat/completions", {"messages": HELLO, "max_tokens": 10, "temperature": 0.0})
    for answer in (done, chat):
        assert answer.status_code == 200
        body = answer.json()
        assert "id" in body and "choices" in body and body["usage"]["completion_tokens"] > 0


# mlx-lm tests/test_server.py: test_streaming_with_draft_model
def test_every_streamed_chunk_has_one_choice_with_a_delta(server):
    chunks = post(server, "/v1/chat/completions", {"messages": HELLO, "max_tokens": 10, "stream": True}, stream=True)
    assert chunks
    for chunk in chunks:
        assert len(chunk["choices"]) == 1 and "delta" in chunk["choices"][0]


# mlx-lm tests/test_server.py: test_prompt_cache_with_draft_model
def test_a_request_sharing_a_prefix_still_answers(server):
    base = [HELLO[0], {"role": "user", "content": "Tell me a story about"}]
    longer = [HELLO[0], {"role": "user", "content": "Tell me a story about dragons."}]
    for messages in (base, longer):
        body = post(server, "/v1/chat/completions", {"messages": messages, "max_tokens": 5, "temperature": 0.0}).json()
        assert body["choices"][0]["message"]["content"] is not None


# llama.cpp tools/server/tests/unit/test_chat_completion.py: test_chat_completion
@pytest.mark.parametrize(
    "user", ["What is the best book", [{"type": "text", "text": "What is"}, {"type": "text", "text": " the best book"}]]
)
def test_chat_usage_counts_the_prompt_and_the_reply(server, host, user):
    messages = [BOOK[0], {"role": "user", "content": user}]
    ids = chat_ids(host, [BOOK[0], {"role": "user", "content": "What is the best book"}])
    expected = reference(host, ids, replace(DEFAULTS, max_tokens=8))
    body = post(server, "/v1/chat/completions", {"max_tokens": 8, "messages": messages}).json()
    assert "cmpl" in body["id"]
    assert body["usage"]["prompt_tokens"] == len(ids)
    assert body["usage"]["completion_tokens"] == len(expected.tokens)
    assert body["usage"]["total_tokens"] == len(ids) + len(expected.tokens)
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant" and choice["message"]["content"] == expected.text
    assert choice["finish_reason"] == ("length" if len(expected.tokens) == 8 else "stop")


# llama.cpp tools/server/tests/unit/test_chat_completion.py: test_chat_completion_stream
def test_a_chat_stream_keeps_its_id_and_ends_with_the_finish_and_the_usage(server, host):
    whole = post(server, "/v1/chat/completions", {"max_tokens": 8, "messages": BOOK}).json()
    chunks = post(
        server,
        "/v1/chat/completions",
        {"max_tokens": 8, "messages": BOOK, "stream": True, "stream_options": {"include_usage": True}},
        stream=True,
    )
    content = ""
    for i, chunk in enumerate(chunks):
        assert chunk["id"] == chunks[0]["id"] and chunk["model"] == "dense_target"
        if not chunk["choices"]:
            assert i == len(chunks) - 1  # the usage chunk comes last
            assert chunk["usage"]["prompt_tokens"] == len(chat_ids(host, BOOK))
            assert chunk["usage"]["completion_tokens"] == whole["usage"]["completion_tokens"]
            continue
        choice = chunk["choices"][0]
        assert ("role" in choice["delta"]) == (i == 0)
        if choice["finish_reason"] in ("stop", "length"):
            assert "content" not in choice["delta"] and choice["finish_reason"] == whole["choices"][0]["finish_reason"]
        else:
            assert choice["finish_reason"] is None
            content += choice["delta"].get("content") or ""
    assert content == whole["choices"][0]["message"]["content"]


# llama.cpp tools/server/tests/unit/test_chat_completion.py: test_chat_completion_with_openai_library
def test_the_openai_library_reads_a_chat_reply(client):
    reply = client.chat.completions.create(model="dense_target", messages=BOOK, max_tokens=8, seed=42, temperature=0.8)
    assert reply.choices[0].finish_reason in ("length", "stop") and reply.choices[0].message.content is not None
    assert reply.usage.completion_tokens <= 8


# llama.cpp tools/server/tests/unit/test_chat_completion.py: test_invalid_chat_completion_req (the two-assistant
# case is left out: a final assistant message is continued here, so that conversation is a valid prefill)
@pytest.mark.parametrize(
    "messages",
    [
        None,
        "string",
        [123],
        [{}],
        [{"role": 123}],
        [{"role": "system", "content": 123}],
        [{"role": "system", "content": "test"}, {}],
    ],
)
def test_invalid_messages_are_a_400_with_an_error(server, messages):
    answer = post(server, "/v1/chat/completions", {"messages": messages})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["message"] and error["type"] == "invalid_request_error" and error["param"].startswith("messages")


# llama.cpp tools/server/tests/unit/test_completion.py: test_completion_stream_vs_non_stream
def test_a_streamed_completion_is_the_whole_one(server):
    body = {"max_tokens": 8, "prompt": "I believe the meaning of life is"}
    whole = post(server, "/v1/completions", body).json()
    chunks = post(server, "/v1/completions", {**body, "stream": True}, stream=True)
    assert "".join(c["choices"][0]["text"] for c in chunks) == whole["choices"][0]["text"]
    assert chunks[-1]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]


# llama.cpp tools/server/tests/unit/test_completion.py: test_completion_with_openai_library,
# test_completion_stream_with_openai_library
def test_the_openai_library_reads_a_completion_whole_and_streamed(client, host):
    expected = reference(
        host, host.engine.tokenizer.encode("I believe the meaning of life is"), replace(DEFAULTS, max_tokens=8)
    )
    done = client.completions.create(model="dense_target", prompt="I believe the meaning of life is", max_tokens=8)
    assert done.choices[0].text == expected.text
    assert done.choices[0].finish_reason == ("length" if len(expected.tokens) == 8 else "stop")
    streamed = client.completions.create(
        model="dense_target", prompt="I believe the meaning of life is", max_tokens=8, stream=True
    )
    assert "".join(c.choices[0].text for c in streamed if c.choices[0].finish_reason is None) == expected.text


# llama.cpp tools/server/tests/unit/test_completion.py: test_completion_stream_with_openai_library_stops (issue 13780)
def test_stop_strings_cut_a_streamed_completion_as_a_whole_one(client, host):
    prompt = "System: You are helpful.\nAssistant:\nHey! How could I help?\nUser:\nTell me a joke.\nAssistant:\n"
    full = reference(host, host.engine.tokenizer.encode(prompt), replace(DEFAULTS, max_tokens=24)).text
    stops = [full[8:11], full[14:17]]
    assert all(s.strip() for s in stops)
    cut = full[: min(full.index(s) for s in stops)]
    done = client.completions.create(model="dense_target", prompt=prompt, stop=stops, max_tokens=24)
    assert done.choices[0].text == cut and done.choices[0].finish_reason == "stop"
    streamed = client.completions.create(model="dense_target", prompt=prompt, stop=stops, max_tokens=24, stream=True)
    assert "".join(c.choices[0].text for c in streamed if c.choices) == cut


# llama.cpp tools/server/tests/unit/test_completion.py: test_consistent_result_same_seed
def test_the_same_seed_gives_the_same_reply(server):
    body = {"prompt": "I believe the meaning of life is", "seed": 42, "temperature": 0.0, "max_tokens": 12}
    texts = {post(server, "/v1/completions", body).json()["choices"][0]["text"] for _ in range(4)}
    assert len(texts) == 1


# llama.cpp tools/server/tests/unit/test_completion.py: test_different_result_different_seed
def test_different_seeds_give_different_replies(server):
    texts = [
        post(
            server,
            "/v1/completions",
            {"prompt": "I believe the meaning of life is", "seed": seed, "temperature": 1.0, "max_tokens": 16},
        ).json()["choices"][0]["text"]
        for seed in range(4)
    ]
    assert all(a != b for a, b in zip(texts, texts[1:]))


# llama.cpp tools/server/tests/unit/test_completion.py: test_completion_with_tokens_input
def test_a_prompt_of_token_ids_is_the_prompt_it_encodes(server, host):
    prompt = "I believe the meaning of life is"
    tokens = host.engine.tokenizer.encode(prompt)
    by_text = post(server, "/v1/completions", {"prompt": prompt, "temperature": 0.0, "max_tokens": 8}).json()
    by_ids = post(server, "/v1/completions", {"prompt": tokens, "temperature": 0.0, "max_tokens": 8}).json()
    assert by_ids["choices"][0]["text"] == by_text["choices"][0]["text"]
    assert by_ids["usage"]["prompt_tokens"] == len(tokens) == by_text["usage"]["prompt_tokens"]


# llama.cpp tools/server/tests/unit/test_completion.py: test_nocache_long_input_prompt (the context is exceeded)
def test_a_prompt_beyond_the_context_is_a_400(server):
    answer = post(server, "/v1/completions", {"prompt": "I believe the meaning of life is " * 4000, "max_tokens": 4})
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "context_length_exceeded"


# llama.cpp tools/server/tests/unit/test_tool_call.py: do_test_completion_with_required_tool_tiny (the request side:
# the random fixture model does not call tools, so the case checks the request is served and the reply read)
def test_a_required_tool_request_is_served(client):
    reply = client.chat.completions.create(
        model="dense_target",
        messages=[
            {"role": "system", "content": "You are a coding assistant."},
            {"role": "user", "content": "Write an example"},
        ],
        tool_choice="required",
        tools=[TEST_TOOL],
        parallel_tool_calls=False,
        max_tokens=8,
        temperature=0.0,
        top_p=1.0,
        extra_body={"top_k": 1},
    )
    assert reply.choices[0].message.role == "assistant" and reply.usage.completion_tokens <= 8


# llama.cpp tools/server/tests/unit/test_tool_call.py: test_completion_without_tool_call_fast
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("tools, tool_choice", [([], None), ([TEST_TOOL], None), ([TEST_TOOL], "none")])
def test_a_reply_without_a_call_has_no_tool_calls(server, tools, tool_choice, stream):
    body = {
        "max_tokens": 16,
        "messages": [
            {"role": "system", "content": "You are a coding assistant."},
            {"role": "user", "content": "say hello world with python"},
        ],
        "tools": tools or None,
        "tool_choice": tool_choice,
        "stream": stream,
    }
    if stream:
        chunks = post(server, "/v1/chat/completions", body, stream=True)
        assert not any(c["choices"][0]["delta"].get("tool_calls") for c in chunks)
        assert chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length")
    else:
        choice = post(server, "/v1/chat/completions", body).json()["choices"][0]
        assert choice["message"].get("tool_calls") is None and choice["finish_reason"] in ("stop", "length")


# OpenAI API reference (n, max_tokens / max_completion_tokens), as llama.cpp's and mlx-lm's servers take them
def test_n_1_is_served_and_max_tokens_caps_the_reply(client):
    one = client.chat.completions.create(model="dense_target", messages=BOOK, n=1, max_tokens=1)
    assert len(one.choices) == 1 and one.usage.completion_tokens == 1 and one.choices[0].finish_reason == "length"
    capped = client.chat.completions.create(model="dense_target", messages=BOOK, max_completion_tokens=3)
    assert capped.usage.completion_tokens == 3 and capped.choices[0].finish_reason == "length"
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="dense_target", messages=BOOK, n=2)
    assert info.value.body["param"] == "n"


# OpenAI API reference (stream_options.include_usage): without it no usage chunk is sent
def test_a_stream_sends_usage_only_when_asked(client):
    plain = list(client.chat.completions.create(model="dense_target", messages=BOOK, max_tokens=4, stream=True))
    assert all(c.choices and c.usage is None for c in plain)
    counted = list(
        client.chat.completions.create(
            model="dense_target", messages=BOOK, max_tokens=4, stream=True, stream_options={"include_usage": True}
        )
    )
    assert counted[-1].choices == [] and counted[-1].usage.completion_tokens == 4


# llama.cpp tools/server/tests/unit/test_chat_completion.py (error cases) and the OpenAI error object:
# {"error": {"message", "type", "param", "code"}}, raised by the official client as its typed errors
def test_errors_have_openais_shape_and_the_clients_types(client):
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="gpt-4o", messages=BOOK)
    assert missing.value.status_code == 404 and missing.value.body["code"] == "model_not_found"
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model="dense_target", messages=BOOK, temperature=-1)
    assert set(bad.value.body) == {"message", "type", "param", "code"} and bad.value.body["param"] == "temperature"
    with pytest.raises(openai.BadRequestError) as bad_tool:
        client.chat.completions.create(
            model="dense_target", messages=BOOK, tools=[{"type": "function", "function": {}}]
        )
    assert bad_tool.value.body["param"] == "tools[0].function.name"
