"""The one way a chat becomes a prompt: messages, system prompt and thinking switch through the chat template."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol


class ChatTemplate(Protocol):
    """What a tokenizer offers to turn messages into token ids (mlx-lm's wrapper, the remote tokenizer)."""

    def apply_chat_template(
        self, messages: list[dict[str, Any]], add_generation_prompt: bool = True, **kwargs: Any
    ) -> Any: ...


def chat_prompt_ids(
    tokenizer: ChatTemplate,
    messages: Sequence[Mapping[str, Any]],
    system_prompt: str = "",
    enable_thinking: bool | None = None,
    template_kwargs: Mapping[str, Any] | None = None,
    add_generation_prompt: bool = True,
    tools: Sequence[Mapping[str, Any]] = (),
    system_note: str = "",
) -> list[int]:
    """Token ids of a conversation, ending with the assistant's turn opening unless add_generation_prompt is False.

    A system prompt goes first; enable_thinking None leaves the template's own default (a request
    may still set it in template_kwargs), True or False sets it. tools go to the template as `tools=`;
    a system note is added to the system message. A conversation that ends with an assistant message
    (without tool calls) is continued: the prompt ends inside that turn, right after its text.
    """
    kwargs = dict(template_kwargs or {})
    if enable_thinking is not None:
        kwargs["enable_thinking"] = enable_thinking
    if tools:
        kwargs["tools"] = [dict(t) for t in tools]
    chat = [dict(m) for m in messages]
    if system_prompt:
        chat.insert(0, {"role": "system", "content": system_prompt})
    if system_note:
        chat = with_system_note(chat, system_note)
    if add_generation_prompt and continues_final_message(chat):
        # transformers' own cut: it renders the turn closed and cuts right after the final message's text
        kwargs["continue_final_message"] = True
        add_generation_prompt = False
    return [int(t) for t in tokenizer.apply_chat_template(chat, add_generation_prompt=add_generation_prompt, **kwargs)]


def continues_final_message(messages: Sequence[Mapping[str, Any]]) -> bool:
    """True when the conversation ends with an assistant's text to continue (a prefill), not with its tool calls."""
    return bool(messages) and messages[-1].get("role") == "assistant" and not messages[-1].get("tool_calls")


def with_system_note(messages: list[dict[str, Any]], note: str) -> list[dict[str, Any]]:
    """The messages with `note` at the end of the first system message (a new one first when there is none)."""
    if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
        first = messages[0]["content"]
        return [{**messages[0], "content": f"{first}\n\n{note}" if first else note}, *messages[1:]]
    return [{"role": "system", "content": note}, *messages]


def user_prompt_ids(tokenizer: ChatTemplate, text: str, enable_thinking: bool = False) -> list[int]:
    """Token ids of one user message (the sweep, the baseline and A/B runs: thinking off)."""
    return chat_prompt_ids(tokenizer, [{"role": "user", "content": text}], enable_thinking=enable_thinking)


def first_out_of_range(ids: Sequence[object], limit: int) -> int | None:
    """The index of the first id that is not an integer in [0, limit), or None when all are.

    A token id outside the embedding table is read past its end by the model's gather (a crash, or
    garbage); every id is checked before any model work.
    """
    for index, token in enumerate(ids):
        if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < limit:
            return index
    return None
