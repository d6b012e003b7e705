"""Tool calls in one turn and templates without tools: several calls (or one for parallel_tool_calls false),
Anthropic's toolu_ ids, the fallback tools prompt for a chat template that ignores `tools=`, and the fenced
```json calls Qwen2.5-Coder writes, through the real server with the official clients."""

import anthropic
import pytest

from specchat.engine.prompt import TOOLS_PROMPT, chat_prompt_ids
from specchat.server.tools import split_tool_calls

from . import test_tools
from .conftest import API_KEY
from .test_tool_requests import HERMES_STYLE, TemplateText, _chat
from .test_tools import ASK, TOOLS, recorded

# the scripted server and its OpenAI client, as test_tools.py runs them
scripted, scripted_client = test_tools.scripted, test_tools.scripted_client


def test_several_calls_come_back_and_parallel_tool_calls_false_keeps_the_first(scripted, scripted_client):
    backend, _ = scripted
    backend.script = (recorded("qwen3_hermes.txt"),)  # two calls in one turn
    for stream in (False, True):
        for parallel, count in ((None, 2), (True, 2), (False, 1)):
            extra = {} if parallel is None else {"parallel_tool_calls": parallel}
            args = dict(model="dense_target", messages=ASK, tools=TOOLS, **extra)
            if stream:
                chunks = list(scripted_client.chat.completions.create(**args, stream=True))
                ids = {call.index for c in chunks for call in c.choices[0].delta.tool_calls or []}
                assert len(ids) == count and chunks[-1].choices[0].finish_reason == "tool_calls"
            else:
                calls = scripted_client.chat.completions.create(**args).choices[0].message.tool_calls
                assert [c.function.name for c in calls] == ["get_current_weather"] * count


def test_anthropic_tool_use_ids_start_with_toolu(scripted):
    backend, server = scripted
    backend.script = (recorded("qwen3_hermes.txt"),)
    claude = anthropic.Anthropic(base_url=server.url, api_key=API_KEY, max_retries=0, timeout=60)
    tools = [{"name": t["function"]["name"], "input_schema": t["function"]["parameters"]} for t in TOOLS]
    args = dict(model="dense_target", max_tokens=50, messages=ASK, tools=tools)
    reply = claude.messages.create(**args)
    uses = [b for b in reply.content if b.type == "tool_use"]
    assert len(uses) == 2 and all(b.id.startswith("toolu_") for b in uses) and reply.stop_reason == "tool_use"
    with claude.messages.stream(**args) as stream:
        final = stream.get_final_message()
    assert [b.id[:6] for b in final.content if b.type == "tool_use"] == ["toolu_", "toolu_"]


FENCED = 'Sure.\n```json\n{"name": "get_current_weather", "arguments": {"location": "Oslo"}}\n```'


def test_a_fenced_json_call_of_an_offered_tool_is_a_call_and_other_fences_stay_text(scripted, scripted_client):
    backend, _ = scripted
    backend.script = tuple(FENCED[i : i + 4] for i in range(0, len(FENCED), 4))
    message = (
        scripted_client.chat.completions.create(model="dense_target", messages=ASK, tools=TOOLS).choices[0].message
    )
    assert message.content == "Sure." and message.tool_calls[0].function.name == "get_current_weather"
    other = FENCED.replace("get_current_weather", "launch_rocket")
    assert split_tool_calls(other, TOOLS) == (other, [])
    assert split_tool_calls('```json\n{"a": 1}\n```', TOOLS) == ('```json\n{"a": 1}\n```', [])


def test_a_template_without_tools_gets_the_fallback_tools_prompt(client, hf_tokenizer):
    plain = client.chat.completions.create(model="dense_target", messages=ASK, max_tokens=1)
    tooled = client.chat.completions.create(model="dense_target", messages=ASK, tools=TOOLS, max_tokens=1)
    assert tooled.usage.prompt_tokens > plain.usage.prompt_tokens  # the fixture's template has no tools section
    rendered = TemplateText(hf_tokenizer, hf_tokenizer.chat_template)
    conversation = _chat({"tools": TOOLS}).messages
    chat_prompt_ids(rendered, conversation, tools=TOOLS)
    assert rendered.text.startswith("<|im_start|>system\nYou are a weather bot.\n\n# Tools\n")
    assert TOOLS_PROMPT.split("{tools}")[1].replace("{{", "{").replace("}}", "}") in rendered.text
    assert '"name": "get_forecast"' in rendered.text  # the tools' signatures
    assert (
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_current_weather", "arguments": {"location": "Paris, France"}}'
        in rendered.text
    )
    assert '<|im_start|>user\n<tool_response>\n{"temperature": 21}\n</tool_response>\n<tool_response>' in rendered.text
    native = TemplateText(hf_tokenizer, HERMES_STYLE)
    chat_prompt_ids(native, conversation, tools=TOOLS)
    assert "# Tools\n<tools>" in native.text and "You may call" not in native.text  # the template's own section


@pytest.fixture(scope="module")
def hf_tokenizer(tok_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tok_dir)
