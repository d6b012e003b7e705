"""Engine logprobs (TokenLogprob) in OpenAI's shapes, and the request fields that ask for them.

Chat completions: choice.logprobs = {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}.
Legacy completions: choice.logprobs = {"tokens", "token_logprobs", "top_logprobs", "text_offset"}.
Pure functions: a streaming response calls them on each TextChunk's logprobs.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from specchat.engine.config import Limit
from specchat.engine.errors import ConfigError
from specchat.engine.grammar import ll_tokenizer
from specchat.engine.json_types import JSONObject, JSONValue
from specchat.engine.logprobs import MAX_TOP_LOGPROBS, TokenLogprob

from .errors import bad_request

if TYPE_CHECKING:
    from llguidance import LLTokenizer

TOP_LOGPROBS = Limit("top_logprobs", 0, MAX_TOP_LOGPROBS, integer=True)
COMPLETION_LOGPROBS = Limit("logprobs", 0, 5, integer=True)  # the legacy endpoint's own limit
TokenBytes = Callable[[int], bytes]


class Decodes(Protocol):
    """The part of a tokenizer (the engine's, or a remote engine's) these functions use."""

    def decode(self, ids: list[int]) -> str: ...


def logprobs_setting(kind: str, body: Mapping[str, JSONValue]) -> int | None:
    """GenerationConfig.logprobs for a request: chat's logprobs (bool) + top_logprobs (0..20), or legacy
    completions' logprobs (0..5); None when not asked. Raises a 400 naming the field for a bad value."""
    if kind == "chat":
        return _chat_setting(body)
    if kind == "completion":
        return _checked(body.get("logprobs"), COMPLETION_LOGPROBS)
    raise ValueError(f"unknown request kind {kind!r}")


def _chat_setting(body: Mapping[str, JSONValue]) -> int | None:
    wanted = body.get("logprobs")
    if wanted is not None and not isinstance(wanted, bool):
        raise bad_request(f"logprobs must be true or false, got {wanted!r}", "logprobs")
    top = _checked(body.get("top_logprobs"), TOP_LOGPROBS)
    if top is not None and wanted is not True:
        raise bad_request("top_logprobs needs logprobs set to true", "top_logprobs")
    return (top or 0) if wanted else None


def _checked(value: object, limit: Limit) -> int | None:
    """None, or the whole number limit accepts; a 400 naming limit.label otherwise."""
    if value is None:
        return None
    if not limit.accepts(value) or not isinstance(value, int):  # an integer Limit accepts only ints anyway
        raise bad_request(limit.message(value), limit.label)
    return value


def token_bytes(tokenizer: Decodes) -> TokenBytes:
    """Each token id's exact bytes: llguidance's table for a Hugging Face tokenizer (a token may hold part
    of a character), else the UTF-8 of the token decoded alone (a remote tokenizer)."""
    table = _byte_table(tokenizer)

    def lookup(token: int) -> bytes:
        if table is not None and 0 <= token < table.vocab_size and not table.is_special_token(token):
            return table.decode_bytes([token])
        return tokenizer.decode([token]).encode("utf-8")

    return lookup


def _byte_table(tokenizer: Decodes) -> LLTokenizer | None:
    """llguidance's tokenizer (built once per tokenizer, as constrained decoding uses it), or None."""
    hf = getattr(tokenizer, "_tokenizer", None)
    if hf is None:
        return None
    try:
        return ll_tokenizer(tokenizer, len(hf), list(getattr(tokenizer, "eos_token_ids", ())))
    except (ConfigError, TypeError):  # not a fast Hugging Face tokenizer
        return None


def token_text(raw: bytes) -> str:
    """OpenAI's token string: the bytes as text, or 'bytes:\\xe2\\x80' for a token that is part of a character."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "bytes:" + "".join(f"\\x{b:02x}" for b in raw)


def chat_logprobs(logprobs: Sequence[TokenLogprob], tokenizer: Decodes) -> JSONObject:
    """Chat completions' choice.logprobs for these tokens (a stream sends each chunk's own)."""
    lookup = token_bytes(tokenizer)
    return {"content": [_chat_entry(lp, lookup) for lp in logprobs]}


def _chat_entry(lp: TokenLogprob, lookup: TokenBytes) -> JSONObject:
    entry = _token_entry(lp.token, lp.logprob, lookup)
    entry["top_logprobs"] = [_token_entry(token, logprob, lookup) for token, logprob in lp.top]
    return entry


def _token_entry(token: int, logprob: float, lookup: TokenBytes) -> JSONObject:
    raw = lookup(token)
    return {"token": token_text(raw), "logprob": logprob, "bytes": list(raw)}


def completion_logprobs(logprobs: Sequence[TokenLogprob], tokenizer: Decodes, text_offset: int = 0) -> JSONObject:
    """Legacy completions' choice.logprobs; text_offset[i] is where token i starts in the text, counted from
    `text_offset` (a stream passes the characters it has sent: text_end of the tokens before)."""
    lookup = token_bytes(tokenizer)
    raws = [lookup(lp.token) for lp in logprobs]
    return {
        "tokens": [token_text(raw) for raw in raws],
        "token_logprobs": [lp.logprob for lp in logprobs],
        "top_logprobs": [_top_dict(lp, lookup) for lp in logprobs],
        "text_offset": _offsets(raws, text_offset)[:-1],
    }


def text_end(logprobs: Sequence[TokenLogprob], tokenizer: Decodes, text_offset: int = 0) -> int:
    """Where the text of these tokens ends, counted from text_offset: the next streamed batch's text_offset."""
    lookup = token_bytes(tokenizer)
    return _offsets([lookup(lp.token) for lp in logprobs], text_offset)[-1]


def _top_dict(lp: TokenLogprob, lookup: TokenBytes) -> dict[str, float]:
    """{text: logprob} of the top alternatives plus the chosen token (OpenAI: up to logprobs + 1 entries)."""
    top = {token_text(lookup(token)): logprob for token, logprob in lp.top}
    top.setdefault(token_text(lookup(lp.token)), lp.logprob)
    return top


def _offsets(raws: list[bytes], start: int) -> list[int]:
    """Character offset of each token in the text of all of them (tokens that share a character all start
    at its offset), then where that text ends."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    offsets, position = [], start
    for raw in raws:
        offsets.append(position)
        position += len(decoder.decode(raw))
    return offsets + [position]
