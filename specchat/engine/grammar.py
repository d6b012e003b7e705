"""Grammars a reply must follow (a JSON schema, any JSON object, a Lark grammar), compiled by llguidance.

JSON is compiled without flexible whitespace and with compact separators: between two tokens of JSON
there is never a run of spaces or newlines to wander into, so even a poor model's JSON ends.
"""

from __future__ import annotations

import functools
import json
import weakref
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llguidance import LLMatcher, LLTokenizer

from .errors import ConfigError
from .json_types import JSONValue

if TYPE_CHECKING:
    from llguidance._lib import JsonCompileOptions  # a TypedDict of the stubs only

KINDS = ("json_schema", "json_object", "lark")
LABELS = {"json_schema": "JSON schema", "json_object": "JSON object grammar", "lark": "Lark grammar"}
ANY_OBJECT = '{"type": "object"}'
# llguidance's JSON options; overrides: a schema's own "x-guidance" cannot turn flexible whitespace back on
JSON_OPTIONS: JsonCompileOptions = {"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"}


@dataclass(frozen=True)
class Grammar:
    """What a reply must follow: kind "json_schema" (source: the schema's JSON text), "json_object" (any JSON
    object, no source) or "lark" (source: a Lark grammar in llguidance's dialect, %json{...} included)."""

    kind: str
    source: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"grammar kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not isinstance(self.source, str):
            raise ConfigError(f"the {self.label}'s source must be text, got {type(self.source).__name__}")

    @classmethod
    def json_schema(cls, schema: Mapping[str, JSONValue] | str) -> Grammar:
        """A JSON schema, given as an object or as its JSON text (property order is kept: the reply's order)."""
        return cls("json_schema", schema if isinstance(schema, str) else json.dumps(schema, ensure_ascii=False))

    @classmethod
    def json_object(cls) -> Grammar:
        """Any JSON object."""
        return cls("json_object")

    @classmethod
    def lark(cls, text: str) -> Grammar:
        """A Lark grammar (llguidance's syntax)."""
        return cls("lark", text)

    @classmethod
    def from_value(cls, value: object) -> Grammar:
        """A Grammar, or the dict asdict() made of one (a config that crossed the wire); ConfigError otherwise."""
        if isinstance(value, Grammar):
            return value
        if isinstance(value, Mapping) and set(value) <= {"kind", "source"} and "kind" in value:
            return cls(str(value["kind"]), value.get("source", ""))
        raise ConfigError(f"grammar must be a Grammar (kind and source), got {value!r}")

    @property
    def label(self) -> str:
        """What it is, in words ("JSON schema")."""
        return LABELS[self.kind]


@functools.lru_cache(maxsize=64)
def grammar_text(grammar: Grammar) -> str:
    """llguidance's grammar for it; ConfigError naming the problem when llguidance cannot compile it."""
    try:
        if grammar.kind == "lark":
            text = LLMatcher.grammar_from_lark(grammar.source)
        else:
            schema = grammar.source if grammar.kind == "json_schema" else ANY_OBJECT
            text = LLMatcher.grammar_from_json_schema(schema, overrides=JSON_OPTIONS)
    except ValueError as exc:  # not a JSON object at all
        raise ConfigError(f"the {grammar.label} is not valid: {exc}") from None
    problem = LLMatcher.validate_grammar(text)
    if problem:
        raise ConfigError(f"the {grammar.label} cannot be compiled: {problem.strip()}")
    return text


def check_grammar(grammar: Grammar) -> None:
    """Raise ConfigError when llguidance cannot compile the grammar (no tokenizer needed)."""
    grammar_text(grammar)


_TOKENIZERS: weakref.WeakKeyDictionary[Any, dict[tuple[int, tuple[int, ...]], LLTokenizer]] = (
    weakref.WeakKeyDictionary()
)


def ll_tokenizer(tokenizer: object, vocab: int, stop_ids: Collection[int]) -> LLTokenizer:
    """llguidance's tokenizer for an mlx-lm tokenizer (its Hugging Face one), masks `vocab` wide, the stop ids
    as its end tokens; built once per tokenizer (about a second on a real vocabulary)."""
    hf: Any = getattr(tokenizer, "_tokenizer", tokenizer)
    stops = tuple(sorted(stop_ids))
    try:
        built = _TOKENIZERS.setdefault(hf, {})
    except TypeError:  # not weakly referenceable: build every time rather than keep it alive
        built = {}
    key = (vocab, stops)
    if key not in built:
        from llguidance.hf import from_tokenizer  # imports transformers: only when a grammar is used

        try:
            built[key] = from_tokenizer(hf, n_vocab=max(vocab, len(hf)), eos_token=list(stops))
        except ValueError as exc:
            raise ConfigError(f"constrained decoding needs a fast Hugging Face tokenizer: {exc}") from None
    return built[key]


def new_matcher(grammar: Grammar, tokenizer: LLTokenizer) -> LLMatcher:
    """A matcher at the start of the reply; ConfigError when the grammar does not fit the tokenizer."""
    matcher = LLMatcher(tokenizer, grammar_text(grammar), log_level=0)
    if matcher.is_error():
        raise ConfigError(f"the {grammar.label} cannot be used with this model's tokenizer: {matcher.get_error()}")
    return matcher
