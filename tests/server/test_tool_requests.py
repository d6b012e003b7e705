"""The request side of tool calling: tool messages, tools and tool_choice checked (400 naming the field), put
in the shape Qwen's templates render (checked with Hermes-style and XML-style templates written here after
the Qwen2.5/Qwen3 and Qwen3-Coder/Qwen3.5 formats), and a several-turn tool conversation through the real server."""

import json
from pathlib import Path

import httpx
import pytest

from specchat.engine import GenerationConfig
from specchat.engine.prompt import chat_prompt_ids
from specchat.server.errors import ApiError
from specchat.server.requests import parse_request
from specchat.server.tool_specs import tool_choice_note

from .conftest import API_KEY

DATA = Path(__file__).resolve().parents[1] / "data" / "tool_calls"
TOOLS = json.loads((DATA / "tools.json").read_text(encoding="utf-8"))
MODELS = ["dense_target"]
WEATHER = {
    "type": "function",
    "function": {"name": "get_current_weather", "arguments": '{"location": "Paris, France"}'},
}

# A turn with two parallel calls and their results, then a reply, a follow-up and one more call and result.
CONVERSATION = [
    {"role": "developer", "content": "You are a weather bot."},
    {"role": "user", "content": "Weather in Paris and Tokyo?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", **WEATHER},
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "get_current_weather", "arguments": {"location": "Tokyo, Japan"}},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temperature": 21}'},
    {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": '{"temperature": 9}'}]},
    {"role": "assistant", "content": "Paris: 21 °C, Tokyo: 9 °C."},
    {"role": "user", "content": "And the forecast for Zürich tomorrow?"},
    {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [
            {
                "id": "call_3",
                "type": "function",
                "function": {"name": "get_forecast", "arguments": '{"location": "Zürich", "days": 1}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_3", "content": "rain"},
]

# After the Qwen2.5/Qwen3 chat templates: tools as JSON lines, calls as Hermes JSON, results as user turns.
HERMES_STYLE = (
    "{%- if tools %}{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{- '# Tools\\n<tools>' }}{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools><|im_end|>\\n' }}"
    "{%- elif messages[0].role == 'system' %}{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' %}{{- '<|im_start|>user\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}{{- '<|im_start|>assistant\\n' + message.content }}"
    "{%- for call in message.tool_calls or [] %}"
    "{%- if call.function is defined %}{%- set call = call.function %}{%- endif %}"
    "{%- if not loop.first or message.content %}{{- '\\n' }}{%- endif %}"
    '{{- \'<tool_call>\\n{"name": "\' + call.name + \'", "arguments": \' }}'
    "{%- if call.arguments is string %}{{- call.arguments }}{%- else %}{{- call.arguments | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}{%- endfor %}{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
# After the Qwen3-Coder/Qwen3.5 chat templates: calls as <function=...> with a <parameter=...> per argument,
# which needs the arguments as a mapping.
XML_STYLE = HERMES_STYLE.replace(
    '{{- \'<tool_call>\\n{"name": "\' + call.name + \'", "arguments": \' }}'
    "{%- if call.arguments is string %}{{- call.arguments }}{%- else %}{{- call.arguments | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}",
    "{{- '<tool_call>\\n<function=' + call.name + '>\\n' }}"
    "{%- if call.arguments is mapping %}{%- for key, value in call.arguments.items() %}"
    "{%- set value = value | tojson if value is mapping or (value is sequence and value is not string)"
    " else value | string %}"
    "{{- '<parameter=' + key + '>\\n' + value + '\\n</parameter>\\n' }}{%- endfor %}{%- endif %}"
    "{{- '</function>\\n</tool_call>' }}",
)


class TemplateText:
    """A tokenizer with another chat template that keeps the text of the last prompt it rendered."""

    def __init__(self, tokenizer, template):
        self.tokenizer, self.template, self.text = tokenizer, template, ""

    def apply_chat_template(self, messages, add_generation_prompt=True, **kwargs):
        self.text = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=add_generation_prompt, tokenize=False, chat_template=self.template, **kwargs
        )
        return self.tokenizer.encode(self.text, add_special_tokens=False)


@pytest.fixture(scope="module")
def hf_tokenizer(tok_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tok_dir)


def _chat(body: dict):
    return parse_request("chat", {"messages": CONVERSATION, **body}, MODELS, GenerationConfig())


def _render(tokenizer, template, req):
    rendered = TemplateText(tokenizer, template)
    chat_prompt_ids(rendered, req.messages, tools=req.offered_tools, system_note=tool_choice_note(req.tool_choice))
    return rendered.text


def test_tool_messages_take_the_shape_the_templates_read():
    req = _chat({"tools": TOOLS})
    system, _, calls, result1, result2, reply, _, call3, result3 = req.messages
    assert system == {"role": "system", "content": "You are a weather bot."}
    assert calls["content"] == "" and [c["function"]["arguments"] for c in calls["tool_calls"]] == [
        {"location": "Paris, France"},
        {"location": "Tokyo, Japan"},
    ]
    assert calls["tool_calls"][0] == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_current_weather", "arguments": {"location": "Paris, France"}},
    }
    assert result1 == {
        "role": "tool",
        "content": '{"temperature": 21}',
        "tool_call_id": "call_1",
        "name": "get_current_weather",
    }
    assert result2["content"] == '{"temperature": 9}' and result3["name"] == "get_forecast"
    assert reply == {"role": "assistant", "content": "Paris: 21 °C, Tokyo: 9 °C."}
    assert call3["content"] == "Let me check." and call3["tool_calls"][0]["function"]["arguments"]["days"] == 1
    assert req.tools == tuple(TOOLS) and req.tool_choice == "auto" and req.parses_tools
    again = parse_request("chat", {"messages": list(req.messages)}, MODELS, GenerationConfig())
    assert again.messages == req.messages  # the shape reads back as itself (the remote tokenizer re-sends it)


def test_the_hermes_style_template_renders_the_conversation(hf_tokenizer):
    text = _render(hf_tokenizer, HERMES_STYLE, _chat({"tools": TOOLS}))
    assert text.startswith("<|im_start|>system\nYou are a weather bot.\n\n# Tools\n<tools>\n")
    assert json.dumps(TOOLS[0], ensure_ascii=False) in text
    assert (
        "<|im_start|>assistant\n<tool_call>\n"
        '{"name": "get_current_weather", "arguments": {"location": "Paris, France"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_current_weather", "arguments": {"location": "Tokyo, Japan"}}\n</tool_call><|im_end|>\n'
        '<|im_start|>user\n<tool_response>\n{"temperature": 21}\n</tool_response>\n'
        '<tool_response>\n{"temperature": 9}\n</tool_response><|im_end|>\n'
        "<|im_start|>assistant\nParis: 21 °C, Tokyo: 9 °C.<|im_end|>\n"
    ) in text
    assert (
        'Let me check.\n<tool_call>\n{"name": "get_forecast", "arguments": {"location": "Zürich", "days": 1}}\n</tool_call>'
        in text
    )
    assert text.endswith("<tool_response>\nrain\n</tool_response><|im_end|>\n<|im_start|>assistant\n")


def test_the_xml_style_template_gets_arguments_as_a_mapping(hf_tokenizer):
    text = _render(hf_tokenizer, XML_STYLE, _chat({"tools": TOOLS}))
    assert (
        "<tool_call>\n<function=get_forecast>\n<parameter=location>\nZürich\n</parameter>\n"
        "<parameter=days>\n1\n</parameter>\n</function>\n</tool_call>"
    ) in text
    assert "<function=get_current_weather>\n<parameter=location>\nTokyo, Japan\n</parameter>" in text


def test_tool_choice_none_hides_the_tools_and_required_or_a_name_adds_a_system_note(hf_tokenizer):
    assert "<tools>" not in _render(hf_tokenizer, HERMES_STYLE, _chat({"tools": TOOLS, "tool_choice": "none"}))
    assert not _chat({"tools": TOOLS, "tool_choice": "none"}).parses_tools
    required = _render(hf_tokenizer, HERMES_STYLE, _chat({"tools": TOOLS, "tool_choice": "required"}))
    assert required.startswith("<|im_start|>system\nYou are a weather bot.\n\n" + tool_choice_note("required"))
    named = {"type": "function", "function": {"name": "get_forecast"}}
    req = _chat({"tools": TOOLS, "tool_choice": named})
    assert req.tool_choice == named and "calling the function get_forecast" in _render(hf_tokenizer, HERMES_STYLE, req)
    alone = parse_request(
        "chat", {"messages": CONVERSATION[1:2], "tools": TOOLS, "tool_choice": "required"}, MODELS, GenerationConfig()
    )
    # a template without a tools section gets SpecChat's tools prompt after the note (tools were dropped before)
    rendered = _render(hf_tokenizer, "{{ messages[0].content }}", alone)
    assert rendered.startswith(tool_choice_note("required") + "\n\n# Tools\n") and "<tools>" in rendered


def test_absent_and_null_tools_are_a_plain_chat():
    # llama.cpp tools/server/tests/unit/test_tool_call.py (do_test_completion_without_tool_call): tools None, tool_choice None
    req = parse_request(
        "chat", {"messages": CONVERSATION[:2], "tools": None, "tool_choice": None}, MODELS, GenerationConfig()
    )
    assert req.tools == () and req.tool_choice == "auto" and not req.parses_tools and req.offered_tools == ()


BAD_CALL = {"role": "assistant", "content": None}
USER = {"role": "user", "content": "hi"}


def _call_with(**function):
    return {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}", **function}}


@pytest.mark.parametrize(
    "body, param",
    [
        ({"messages": [USER, {**BAD_CALL, "tool_calls": "x"}]}, "messages[1].tool_calls"),
        ({"messages": [USER, {**BAD_CALL, "tool_calls": [5]}]}, "messages[1].tool_calls[0]"),
        (
            {"messages": [USER, {**BAD_CALL, "tool_calls": [{**_call_with(), "type": "code"}]}]},
            "messages[1].tool_calls[0].type",
        ),
        ({"messages": [USER, {**BAD_CALL, "tool_calls": [{**_call_with(), "id": 7}]}]}, "messages[1].tool_calls[0].id"),
        (
            {"messages": [USER, {**BAD_CALL, "tool_calls": [{"id": "c", "type": "function"}]}]},
            "messages[1].tool_calls[0].function",
        ),
        (
            {"messages": [USER, {**BAD_CALL, "tool_calls": [_call_with(name="")]}]},
            "messages[1].tool_calls[0].function.name",
        ),
        (
            {"messages": [USER, {**BAD_CALL, "tool_calls": [_call_with(arguments="{bad")]}]},
            "messages[1].tool_calls[0].function.arguments",
        ),
        (
            {"messages": [USER, {**BAD_CALL, "tool_calls": [_call_with(arguments="[1]")]}]},
            "messages[1].tool_calls[0].function.arguments",
        ),
        (
            {"messages": [USER, {**BAD_CALL, "tool_calls": [_call_with(arguments=3)]}]},
            "messages[1].tool_calls[0].function.arguments",
        ),
        ({"messages": [USER, BAD_CALL]}, "messages[1].content"),
        ({"messages": [USER, {**BAD_CALL, "tool_calls": []}]}, "messages[1].content"),
        ({"messages": [USER, {"role": "tool", "content": "x"}]}, "messages[1].tool_call_id"),
        ({"messages": [USER, {"role": "tool", "content": "x", "tool_call_id": ""}]}, "messages[1].tool_call_id"),
        ({"messages": [USER, {"role": "tool", "tool_call_id": "c"}]}, "messages[1].content"),
        ({"messages": [USER, {"role": "tool", "tool_call_id": "c", "content": "x", "name": 3}]}, "messages[1].name"),
        ({"messages": [{"role": "developer", "content": 5}]}, "messages[0].content"),
        ({"messages": [USER], "tools": "x"}, "tools"),
        ({"messages": [USER], "tools": [{"type": "retrieval"}]}, "tools[0].type"),
        ({"messages": [USER], "tools": [{"type": "function"}]}, "tools[0].function"),
        (
            {"messages": [USER], "tools": [{"type": "function", "function": {"name": "has space"}}]},
            "tools[0].function.name",
        ),
        (
            {"messages": [USER], "tools": [{"type": "function", "function": {"name": 'q"uote'}}]},
            "tools[0].function.name",
        ),
        (
            {"messages": [USER], "tools": [{"type": "function", "function": {"name": "f", "description": 1}}]},
            "tools[0].function.description",
        ),
        (
            {"messages": [USER], "tools": [{"type": "function", "function": {"name": "f", "parameters": "x"}}]},
            "tools[0].function.parameters",
        ),
        (
            {
                "messages": [USER],
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "array"}}}],
            },
            "tools[0].function.parameters.type",
        ),
        (
            {
                "messages": [USER],
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {"properties": []}}}],
            },
            "tools[0].function.parameters.properties",
        ),
        (
            {
                "messages": [USER],
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {"required": "a"}}}],
            },
            "tools[0].function.parameters.required",
        ),
        ({"messages": [USER], "tools": TOOLS + TOOLS[:1]}, f"tools[{len(TOOLS)}].function.name"),
        ({"messages": [USER], "tools": TOOLS, "tool_choice": "sometimes"}, "tool_choice"),
        ({"messages": [USER], "tool_choice": "required"}, "tool_choice"),
        ({"messages": [USER], "tools": TOOLS, "tool_choice": {"type": "function"}}, "tool_choice"),
        (
            {"messages": [USER], "tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
            "tool_choice.function.name",
        ),
    ],
)
def test_malformed_tool_fields_are_refused_by_name(body, param):
    with pytest.raises(ApiError) as info:
        parse_request("chat", body, MODELS, GenerationConfig())
    assert info.value.status == 400 and info.value.param == param, info.value.message


def test_empty_arguments_and_an_object_are_accepted_as_arguments():
    for arguments, expected in (("", {}), (None, {}), ({"a": [1]}, {"a": [1]}), ('{"a": 1}', {"a": 1})):
        body = {"messages": [USER, {**BAD_CALL, "tool_calls": [_call_with(arguments=arguments)]}]}
        call = parse_request("chat", body, MODELS, GenerationConfig()).messages[1]["tool_calls"][0]
        assert call["function"]["arguments"] == expected
    body = {"messages": [USER, {**BAD_CALL, "tool_calls": [{"function": {"name": "f"}}]}]}
    call = parse_request("chat", body, MODELS, GenerationConfig()).messages[1]["tool_calls"][0]
    assert call["id"].startswith("call_") and call["type"] == "function"  # an id is made when the client sent none


def _post(server, body):
    return httpx.post(
        server.url + "/v1/chat/completions", json=body, timeout=120, headers={"Authorization": f"Bearer {API_KEY}"}
    )


@pytest.mark.slow
def test_a_tool_conversation_of_several_turns_is_served_with_the_template_and_its_tools(server, client, hf_tokenizer):
    # mlx-lm tests/test_server.py (test_handle_chat_completions_with_null_tool_content), at several turns
    template_kwargs = {"chat_template": HERMES_STYLE}
    reply = client.chat.completions.create(
        model="dense_target",
        messages=CONVERSATION,
        tools=TOOLS,
        max_tokens=4,
        extra_body={"chat_template_kwargs": template_kwargs},
    )
    expected = TemplateText(hf_tokenizer, HERMES_STYLE)
    ids = chat_prompt_ids(expected, _chat({"tools": TOOLS}).messages, tools=TOOLS)
    assert reply.usage.prompt_tokens == len(ids) and "<tools>" in expected.text
    assert reply.choices[0].message.role == "assistant" and reply.usage.completion_tokens <= 4
    streamed = client.chat.completions.create(
        model="dense_target",
        messages=CONVERSATION,
        tools=TOOLS,
        tool_choice="required",
        max_tokens=4,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"chat_template_kwargs": template_kwargs},
    )
    chunks = list(streamed)
    assert chunks[-1].usage.prompt_tokens > len(ids)  # the system note asking for a call
    plain = client.chat.completions.create(model="dense_target", messages=CONVERSATION, tools=TOOLS, max_tokens=2)
    assert plain.choices[0].finish_reason in ("length", "stop")  # the fixture's own template takes tool turns too


def test_a_template_that_refuses_the_messages_is_a_400_naming_messages(server):
    body = {
        "messages": [USER],
        "chat_template_kwargs": {"chat_template": "{{ raise_exception('Conversation roles must alternate') }}"},
    }
    answer = _post(server, body)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["param"] == "messages" and "Conversation roles must alternate" in error["message"]


def test_a_malformed_tool_call_is_a_400_from_the_server(server):
    body = {"messages": [USER, {**BAD_CALL, "tool_calls": [_call_with(arguments="{bad")]}]}
    answer = _post(server, body)
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "messages[1].tool_calls[0].function.arguments"
