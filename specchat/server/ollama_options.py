"""Ollama's `options` as OpenAI fields: sampling and limits that SpecChat applies exactly are mapped, settings
of Ollama's own runtime that change nothing here are accepted, and anything SpecChat cannot apply alike to the
drafts and the target (penalties, mirostat, tail-free and typical sampling) is a 400 naming it, never ignored."""

from __future__ import annotations

from dataclasses import dataclass

from specchat.engine.config import LIMITS
from specchat.engine.json_types import JSONObject

from .errors import bad_request


@dataclass(frozen=True)
class Served:
    """What a request is checked against: the chat template's thinking switch and the context length."""

    thinking_switch: bool | None = None  # None: not known (the template is not readable here)
    context: int | None = None


SAME = ("temperature", "top_p", "top_k", "min_p", "seed", "stop")  # same name and meaning as OpenAI's fields
# Ollama's load and runtime settings that only concern llama.cpp (threads, GPU layers, memory mapping, batch)
HARMLESS = (
    "numa",
    "num_batch",
    "num_gpu",
    "main_gpu",
    "low_vram",
    "f16_kv",
    "use_mmap",
    "use_mlock",
    "num_thread",
    "num_keep",
    "repeat_last_n",
    "penalize_newline",
)
# options whose value changes what would be sampled: only their neutral value is accepted
NEUTRAL: dict[str, float] = {
    "repeat_penalty": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "mirostat": 0,
    "tfs_z": 1.0,
    "typical_p": 1.0,
}
OFF_ONLY = ("logits_all", "vocab_only", "embedding_only")  # modes of Ollama's runner that are not a chat
UNLIMITED = (-1, -2)  # num_predict: no limit, or fill the context: the engine stops at the context's end


def openai_options(options: object, served: Served) -> JSONObject:
    """OpenAI fields for Ollama's options; ApiError naming the first option that cannot be applied."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise bad_request("options must be an object", "options")
    out: JSONObject = {}
    for name, value in options.items():
        if value is None or name in HARMLESS:
            continue
        if name in SAME:
            out[name] = value
        elif name == "num_predict":
            out["max_tokens"] = _num_predict(value)
        elif name == "num_ctx":
            _num_ctx(value, served.context)
        else:
            _refuse_unless_neutral(name, value)
    return out


def _num_predict(value: object) -> int:
    """max_tokens for num_predict: a positive count, or -1 / -2 (no limit: the most SpecChat allows)."""
    if isinstance(value, bool) or not isinstance(value, int) or (value < 1 and value not in UNLIMITED):
        raise bad_request(
            f"options.num_predict must be a positive whole number, or -1 (no limit), got {value!r}",
            "options.num_predict",
        )
    high = int(LIMITS["max_tokens"].high)
    if value > high:
        raise bad_request(f"options.num_predict must be at most {high}, got {value}", "options.num_predict")
    return high if value in UNLIMITED else value


def _num_ctx(value: object, context: int | None) -> None:
    """num_ctx is accepted within the served context window (the model's own, or the --context-length cap)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise bad_request(f"options.num_ctx must be a positive whole number, got {value!r}", "options.num_ctx")
    if context is not None and value > context:
        raise bad_request(
            f"options.num_ctx is {value} but the served context holds {context} tokens", "options.num_ctx"
        )


def _refuse_unless_neutral(name: str, value: object) -> None:
    if name in OFF_ONLY:
        if value is False:
            return
        raise bad_request(f"options.{name} is not supported by this server (send false or leave it out)", name)
    if name not in NEUTRAL:
        raise bad_request(f"options.{name} is not an option this server knows", f"options.{name}")
    neutral = NEUTRAL[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != neutral:
        raise bad_request(
            f"options.{name} is not supported by this server (send {neutral:g} or leave it out): SpecChat applies "
            "only what it can apply identically to the drafts and the target",
            f"options.{name}",
        )
