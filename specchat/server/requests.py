"""Read an OpenAI-style request body into what the engine needs, refusing bad values with a 400
that names the field. The limits come from GenerationConfig (no range is repeated here)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from specchat.engine.config import GenerationConfig, check_draft_tokens
from specchat.engine.errors import ConfigError
from specchat.engine.json_types import JSONObject
from specchat.engine.prompt import continues_final_message

from .errors import bad_request, not_found
from .logprobs import logprobs_setting
from .messages import parse_messages
from .request_model import GenerationBody, generation_body
from .structured import check_tools, response_format_grammar, tool_call_grammar
from .tool_specs import parse_tool_choice, parse_tools


@dataclass(frozen=True)
class ApiRequest:
    """One parsed request: a chat (messages) or a completion (prompt), and how to generate it."""

    kind: str  # "chat" or "completion"
    model: str
    cfg: GenerationConfig
    messages: tuple[JSONObject, ...] = ()  # in the chat template's shape (see messages.py)
    prompt: str | tuple[int, ...] = ""
    stop: tuple[str, ...] = ()
    stream: bool = False
    include_usage: bool = False
    template_kwargs: JSONObject = field(default_factory=dict)
    tools: tuple[JSONObject, ...] = ()  # OpenAI's {"type": "function", "function": {name, description, parameters}}
    tool_choice: str | JSONObject = "auto"  # none, auto, required or {"type": "function", "function": {"name"}}
    parallel_tool_calls: bool = True  # False: one call at most

    @property
    def parses_tools(self) -> bool:
        """Whether the reply is read for tool calls: a chat with tools that tool_choice does not switch off."""
        return self.kind == "chat" and bool(self.tools) and self.tool_choice != "none"

    @property
    def offered_tools(self) -> tuple[JSONObject, ...]:
        """The tools the chat template shows the model (none for tool_choice none)."""
        return self.tools if self.parses_tools else ()


def parse_request(kind: str, body: object, models: list[str], defaults: GenerationConfig) -> ApiRequest:
    """Check a chat or completion body; raise ApiError naming the first field that is wrong."""
    if not isinstance(body, dict):
        raise bad_request("The request body must be a JSON object")
    model = _model(body, models)
    generation = generation_body(body)
    _refuse_unapplied(body)
    if kind == "completion":
        _refuse_completion_extras(body)
    options = generation.stream_options
    base = ApiRequest(
        kind,
        model,
        replace(_config(generation, defaults), logprobs=logprobs_setting(kind, body)),
        stop=generation.stop_sequences,
        stream=generation.stream,
        include_usage=generation.stream and bool(options and options.include_usage),
    )
    if kind == "chat":
        kwargs = body.get("chat_template_kwargs") or {}
        if not isinstance(kwargs, dict):
            raise bad_request("chat_template_kwargs must be an object", "chat_template_kwargs")
        tools = parse_tools(body.get("tools"))
        chat = replace(
            base,
            messages=parse_messages(body.get("messages")),
            template_kwargs=dict(kwargs),
            tools=tools,
            tool_choice=parse_tool_choice(body.get("tool_choice"), tools),
            parallel_tool_calls=_parallel(body),
        )
        return _constrained(chat, body)
    return _constrained(replace(base, prompt=_prompt(body.get("prompt"))), body)


def _constrained(req: ApiRequest, body: JSONObject) -> ApiRequest:
    """The request with the grammar its response_format or forced tool call asks for (checked before any model
    work: a schema the grammar library cannot compile is a 400 naming it)."""
    max_tokens = req.cfg.max_tokens
    fmt = response_format_grammar(body.get("response_format"), max_tokens)
    if req.tools:
        check_tools(list(req.tools))  # every tool's schema, whatever tool_choice is
    tool = (
        tool_call_grammar(list(req.tools), req.tool_choice, max_tokens, req.parallel_tool_calls)
        if req.parses_tools
        else None
    )
    if fmt is not None and tool is not None:
        raise bad_request(
            "response_format cannot be combined with a forced tool call (tool_choice required or named): "
            "the tool call's arguments already follow the function's parameters schema",
            "response_format",
        )
    grammar = fmt or tool
    if grammar is None:
        return req
    return replace(req, cfg=replace(req.cfg, grammar=grammar, grammar_prefix=prefill_text(req.messages)))


def prefill_text(messages: tuple[JSONObject, ...]) -> str:
    """The text of a final assistant message the prompt continues (a prefill), else ''."""
    if not messages or not continues_final_message(messages):
        return ""
    content = messages[-1].get("content")
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


UNAPPLIED = ("presence_penalty", "frequency_penalty", "repetition_penalty")


def _refuse_unapplied(body: JSONObject) -> None:
    """Penalties and logit_bias change what the target would choose; speculation would have to apply them
    identically when drafting and verifying. Until it does, a value that would change anything is refused,
    never ignored."""
    for name in UNAPPLIED:
        value = body.get(name)
        neutral = 1.0 if name == "repetition_penalty" else 0.0
        if value is not None and value != neutral:
            raise bad_request(
                f"{name} is not supported by this server (send {neutral:g} or leave it out): SpecChat applies "
                "only what it can apply identically to the drafts and the target",
                name,
                "unsupported_parameter",
            )
    if body.get("logit_bias"):
        raise bad_request(
            "logit_bias is not supported by this server (send {} or leave it out): SpecChat applies only what "
            "it can apply identically to the drafts and the target",
            "logit_bias",
            "unsupported_parameter",
        )


def _refuse_completion_extras(body: JSONObject) -> None:
    """Legacy completions' echo, suffix and best_of: a 400 naming the field unless neutral (false, null or "", 1)."""
    for name, neutral in (("echo", False), ("suffix", ""), ("best_of", 1)):
        value = body.get(name)
        if value is not None and (value != neutral or type(value) is not type(neutral)):
            raise bad_request(
                f"{name} is not supported by this server (send {json.dumps(neutral)} or leave it out), got {value!r}",
                name,
                "unsupported_parameter",
            )


def _parallel(body: JSONObject) -> bool:
    """parallel_tool_calls: true (several calls in one turn, the default) or false (one at most)."""
    value = body.get("parallel_tool_calls", True)
    if value is None:
        return True
    if not isinstance(value, bool):
        raise bad_request(f"parallel_tool_calls must be true or false, got {value!r}", "parallel_tool_calls")
    return value


def _model(body: JSONObject, models: list[str]) -> str:
    name = body.get("model")
    if name is None:
        return models[0]
    if not isinstance(name, str) or name not in models:
        raise not_found(f"The model {name!r} is not loaded here; this server serves: {', '.join(models)}", "model")
    return name


def _config(generation: GenerationBody, defaults: GenerationConfig) -> GenerationConfig:
    """The defaults with what the body sets; K checked against the mode it will run in."""
    values = generation.config_values()
    try:
        check_draft_tokens(values.get("mode", defaults.mode), values.get("num_draft_tokens", defaults.num_draft_tokens))
        return replace(defaults, **values)
    except ConfigError as exc:
        raise bad_request(str(exc), "speculation.num_draft_tokens") from None


def _prompt(prompt: object) -> str | tuple[int, ...]:
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]  # one string, or one list of token ids, in a batch of one
    if isinstance(prompt, str) and prompt:
        return prompt
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
        return tuple(prompt)  # each id is checked against the model's vocabulary by the backend
    raise bad_request("prompt must be a non-empty string (or one string, or a list of token ids)", "prompt")
