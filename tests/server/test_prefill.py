"""A conversation that ends with an assistant message is continued (HF's continue_final_message): the prompt
ends inside that turn, right after its text, and the reply goes on from there."""

import pytest

from specchat.engine.prompt import chat_prompt_ids
from specchat.server.remote import RemoteEngine

from .conftest import API_KEY, DEFAULTS, reference

MESSAGES = [{"role": "user", "content": "Write a short story about a fox."}]
PARTIALS = ["Once upon a time, a fox", "The answer is ", "Zoë said: «"]


class TokenIds:
    """A transformers tokenizer whose apply_chat_template gives the ids (as mlx-lm's wrapper does)."""

    def __init__(self, folder):
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.encode, self.decode = self.tokenizer.encode, self.tokenizer.decode

    def apply_chat_template(self, messages, add_generation_prompt=True, **kwargs):
        return self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=add_generation_prompt, return_dict=False, **kwargs
        )


@pytest.fixture(scope="module")
def tiny_tokenizer(tok_dir):
    return TokenIds(tok_dir)


@pytest.fixture(scope="module")
def smollm_tokenizer(smollm_dir):
    return TokenIds(smollm_dir)


def _check_continued(tokenizer, partial, end_of_turn):
    conversation = [*MESSAGES, {"role": "assistant", "content": partial}]
    continued = chat_prompt_ids(tokenizer, conversation)
    tail = tokenizer.encode(partial, add_special_tokens=False)
    assert continued[-len(tail) :] == tail, "the prompt ends with the partial reply's tokens"
    assert continued == chat_prompt_ids(tokenizer, MESSAGES) + tail  # the turn's opening, then the text
    closed = chat_prompt_ids(tokenizer, conversation, add_generation_prompt=False)
    assert closed[: len(continued)] == continued and tokenizer.decode(closed[len(continued) :]) == end_of_turn


@pytest.mark.parametrize("partial", PARTIALS)
def test_the_tiny_template_continues_the_final_assistant_message(tiny_tokenizer, partial):
    _check_continued(tiny_tokenizer, partial, "<|im_end|>\n")


@pytest.mark.parametrize("partial", PARTIALS)
def test_smollm2s_template_continues_the_final_assistant_message(smollm_tokenizer, partial):
    _check_continued(smollm_tokenizer, partial, "<|im_end|>\n")


def test_a_final_assistant_turn_of_tool_calls_is_closed_and_a_new_turn_opened(tiny_tokenizer):
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {}}}
    conversation = [*MESSAGES, {"role": "assistant", "content": "", "tool_calls": [call]}]
    ids = chat_prompt_ids(tiny_tokenizer, conversation)
    assert ids == tiny_tokenizer.apply_chat_template(conversation, add_generation_prompt=True)


def test_the_engines_and_the_remote_tokenizer_continue_alike(host, server, tiny_tokenizer):
    conversation = [*MESSAGES, {"role": "assistant", "content": PARTIALS[0]}]
    local = chat_prompt_ids(host.engine.tokenizer, conversation)
    assert local == chat_prompt_ids(tiny_tokenizer, conversation)
    remote = RemoteEngine(server.url, API_KEY).tokenizer
    assert chat_prompt_ids(remote, conversation) == local


@pytest.mark.parametrize("prefill", ["Whill", [{"type": "text", "text": "Wh"}, {"type": "text", "text": "ill"}]])
def test_the_server_continues_an_assistant_prefill(client, host, prefill):
    # llama.cpp tools/server/tests/unit/test_chat_completion.py (test_chat_template_assistant_prefill)
    conversation = [
        {"role": "system", "content": "Book"},
        {"role": "user", "content": "What is the best book"},
        {"role": "assistant", "content": prefill},
    ]
    ids = chat_prompt_ids(host.engine.tokenizer, [*conversation[:2], {"role": "assistant", "content": "Whill"}])
    assert host.engine.tokenizer.decode(ids).endswith("<|im_start|>assistant\nWhill")
    expected = reference(host, ids, DEFAULTS)
    reply = client.chat.completions.create(model="dense_target", messages=conversation)
    assert reply.usage.prompt_tokens == len(ids)
    assert reply.choices[0].message.content == expected.text  # the continuation only, as llama.cpp and mlx-lm answer
