"""The one way a chat becomes a prompt: messages, system prompt and thinking switch through the chat template."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Protocol

from .json_types import JSONObject, JSONValue, as_list


class ChatTemplate(Protocol):
    """What a tokenizer offers to turn messages into token ids (mlx-lm's wrapper, the remote tokenizer)."""

    def apply_chat_template(
        self, messages: list[JSONObject], add_generation_prompt: bool = True, **kwargs: JSONValue
    ) -> list[int]: ...


def chat_prompt_ids(
    tokenizer: ChatTemplate,
    messages: Sequence[Mapping[str, JSONValue]],
    system_prompt: str = "",
    enable_thinking: bool | None = None,
    template_kwargs: Mapping[str, JSONValue] | None = None,
    add_generation_prompt: bool = True,
    tools: Sequence[Mapping[str, JSONValue]] = (),
    system_note: str = "",
) -> list[int]:
    """Token ids of a conversation, ending with the assistant's turn opening unless add_generation_prompt is False.

    A system prompt goes first; enable_thinking None leaves the template's own default (a request
    may still set it in template_kwargs), True or False sets it. tools go to the template as `tools=`;
    a system note is added to the system message. A conversation that ends with an assistant message
    (without tool calls) is continued: the prompt ends inside that turn, right after its text. When that
    message carries the reply's own token ids (`token_ids`, as generated), the prompt is the conversation
    before it with the turn opened, then those ids: exactly what the reply was generated from, so its
    continuation is the one a larger budget would have given.
    """
    reply_ids = continued_reply_ids(messages) if add_generation_prompt else None
    if reply_ids is not None:
        before = chat_prompt_ids(
            tokenizer, messages[:-1], system_prompt, enable_thinking, template_kwargs, True, tools, system_note
        )
        return before + reply_ids
    kwargs: JSONObject = dict(template_kwargs or {})
    if enable_thinking is not None:
        kwargs["enable_thinking"] = enable_thinking
    chat: list[JSONObject] = [dict(m) for m in messages]
    if system_prompt:
        chat.insert(0, {"role": "system", "content": system_prompt})
    if system_note:
        chat = with_system_note(chat, system_note)
    if add_generation_prompt and continues_final_message(chat):
        # transformers' own cut: it renders the turn closed and cuts right after the final message's text
        kwargs["continue_final_message"] = True
        add_generation_prompt = False

    def render(chat: list[JSONObject], **more: JSONValue) -> list[int]:
        ids = tokenizer.apply_chat_template(chat, add_generation_prompt=add_generation_prompt, **kwargs, **more)
        return [int(t) for t in ids]

    if not tools:
        return render(chat)
    plain = render(chat)
    ids = render(chat, tools=[dict(t) for t in tools])
    if ids != plain:
        return ids
    return render(tools_fallback(chat, tools))  # the template ignores tools: SpecChat's own tools prompt


# Qwen2.5's own tools prompt (Hermes style), for a chat template without a tools section
TOOLS_PROMPT = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{tools}\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>'
)


def tools_fallback(messages: list[JSONObject], tools: Sequence[Mapping[str, JSONValue]]) -> list[JSONObject]:
    """The chat for a template that ignores `tools=`: TOOLS_PROMPT in the system message, earlier calls as
    <tool_call> blocks in the assistant's text, tool results as a user turn of <tool_response> blocks."""
    listed = "\n".join(json.dumps(dict(t), ensure_ascii=False) for t in tools)
    out: list[JSONObject] = []
    for message in messages:
        calls = as_list(message.get("tool_calls"))
        if message.get("role") == "tool":
            response = f"<tool_response>\n{message.get('content', '')}\n</tool_response>"
            if out and out[-1].get("tool_results"):
                out[-1] = {**out[-1], "content": f"{out[-1]['content']}\n{response}"}
            else:
                out.append({"role": "user", "content": response, "tool_results": True})
        elif message.get("role") == "assistant" and calls:
            blocks = [_call_text(call) for call in calls if isinstance(call, Mapping)]
            content = message.get("content")
            text = "\n".join([str(content)] + blocks if content else blocks)
            out.append({k: v for k, v in message.items() if k != "tool_calls"} | {"content": text})
        else:
            out.append(message)
    chat = [{k: v for k, v in m.items() if k != "tool_results"} for m in out]
    return with_system_note(chat, TOOLS_PROMPT.format(tools=listed))


def _call_text(call: Mapping[str, JSONValue]) -> str:
    """One earlier call as the <tool_call> block TOOLS_PROMPT asks for."""
    inner = call.get("function", call)
    function = inner if isinstance(inner, Mapping) else call
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass
    body = json.dumps({"name": function.get("name"), "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def continues_final_message(messages: Sequence[Mapping[str, JSONValue]]) -> bool:
    """True when the conversation ends with an assistant's text to continue (a prefill), not with its tool calls."""
    return bool(messages) and messages[-1].get("role") == "assistant" and not messages[-1].get("tool_calls")


def continued_reply_ids(messages: Sequence[Mapping[str, JSONValue]]) -> list[int] | None:
    """The token ids a final assistant message carries (`token_ids`: the reply as generated, to continue exactly);
    None when it carries none. ValueError when they are not a list of whole numbers."""
    if not continues_final_message(messages) or "token_ids" not in messages[-1]:
        return None
    ids = messages[-1]["token_ids"]
    if not isinstance(ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
        raise ValueError(f"the reply to continue has token_ids that are not a list of token ids: {ids!r:.80}")
    return [int(t) for t in ids]


def with_system_note(messages: list[JSONObject], note: str) -> list[JSONObject]:
    """The messages with `note` at the end of the first system message (a new one first when there is none)."""
    first = messages[0].get("content") if messages and messages[0].get("role") == "system" else None
    if isinstance(first, str):
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
