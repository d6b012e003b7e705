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
) -> list[int]:
    """Token ids of a conversation, ending with the assistant's turn opening unless add_generation_prompt is False.

    A system prompt goes first; enable_thinking None leaves the template's own default (a request
    may still set it in template_kwargs), True or False sets it.
    """
    kwargs = dict(template_kwargs or {})
    if enable_thinking is not None:
        kwargs["enable_thinking"] = enable_thinking
    chat = [dict(m) for m in messages]
    if system_prompt:
        chat.insert(0, {"role": "system", "content": system_prompt})
    return [int(t) for t in tokenizer.apply_chat_template(chat, add_generation_prompt=add_generation_prompt, **kwargs)]


def user_prompt_ids(tokenizer: ChatTemplate, text: str, enable_thinking: bool = False) -> list[int]:
    """Token ids of one user message (the sweep, the baseline and A/B runs: thinking off)."""
    return chat_prompt_ids(tokenizer, [{"role": "user", "content": text}], enable_thinking=enable_thinking)
