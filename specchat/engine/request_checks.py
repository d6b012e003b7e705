"""What Engine checks of a request before any model work: its prompt's token ids, the room the context leaves
for its reply (the user's cap or the model's own limit) and its grammar; mixed into Engine (engine.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from .config import GenerationConfig
from .constraint import GrammarState
from .errors import ConfigError, EngineError
from .loading import SETTING_SOURCE, LoadedModel, checked_context_length, context_window, vocab_size
from .prompt import first_out_of_range

if TYPE_CHECKING:
    from .tokenizer import Tokenizer


class Admission(NamedTuple):
    """What Engine.admit found a request may do: its token budget and its grammar at the reply's start."""

    budget: int
    grammar: GrammarState | None


class RequestChecks:
    """Admission of a prompt and config, and the context cap it is held to; the host class (Engine) provides
    target, draft, _context_length and tokenizer."""

    target: LoadedModel
    draft: LoadedModel | None
    _context_length: int | None

    if TYPE_CHECKING:  # provided by the host class (Engine)

        @property
        def tokenizer(self) -> Tokenizer: ...

    @property
    def vocab_limit(self) -> int:
        """Token ids every loaded model can read run from 0 up to this (exclusive)."""
        models = [self.target] + ([self.draft] if self.draft is not None else [])
        return min(vocab_size(model) for model in models)

    @property
    def context_length(self) -> int | None:
        """The user's cap on the tokens a prompt and its reply may fill; None: the model's own limit."""
        return self._context_length

    @context_length.setter
    def context_length(self, cap: int | None) -> None:
        # MLX's KV caches grow as needed: the cap bounds the context (and what its caches may grow to), it reserves
        # nothing. ConfigError when it is out of range or above what the model holds.
        self._context_length = checked_context_length(cap, self.target.config, self.target.name)

    def context_window(self) -> tuple[int, str] | None:
        """The tokens a prompt and its reply may fill, and where that number comes from (the user's setting or
        max_position_embeddings in config.json); None when neither is known."""
        return context_window(self.target.config, self._context_length)

    def admit(self, prompt: Sequence[int], cfg: GenerationConfig) -> Admission:
        """Check a prompt and config before any model work: ConfigError (caches intact) when the prompt is
        empty, holds a token id outside the vocabulary, leaves no room in the context, or the grammar
        cannot be used; else the reply's token budget and its grammar state."""
        if not prompt:
            raise ConfigError("the prompt is empty: at least one token is needed")
        bad = first_out_of_range(prompt, self.vocab_limit)
        if bad is not None:
            raise ConfigError(
                f"prompt token {bad} is {prompt[bad]!r}: token ids of {self.target.name} run from 0 to "
                f"{self.vocab_limit - 1}"
            )
        return Admission(self._budget(len(prompt), cfg.max_tokens), self._grammar(cfg))

    def _grammar(self, cfg: GenerationConfig) -> GrammarState | None:
        """The grammar of the reply at its start (None without one); ConfigError when it cannot be used."""
        if cfg.grammar is None:
            return None
        stops = self.tokenizer.eos_token_ids
        state = GrammarState.start(cfg.grammar, self.tokenizer, vocab_size(self.target), stops)
        if cfg.grammar_prefix:
            try:
                state.consume(list(self.tokenizer.encode(cfg.grammar_prefix, add_special_tokens=False)))
            except EngineError as exc:
                why = next((line for line in str(exc).splitlines() if line.startswith("Error:")), str(exc)[:200])
                raise ConfigError(
                    f"the reply's prefill {cfg.grammar_prefix!r} does not follow its response format ({why})"
                ) from None
        return state

    def _budget(self, prompt_tokens: int, max_tokens: int) -> int:
        """Tokens this reply may generate: max_tokens, cut to what the context has room for.
        ConfigError (before any model work) when the prompt leaves no room at all."""
        window = self.context_window()
        if window is None:
            return max_tokens
        size, source = window
        if prompt_tokens >= size:
            raise ConfigError(
                f"the prompt is {prompt_tokens} tokens but {self.target.name} takes at most "
                f"{size} ({source}): shorten the conversation or start a new one"
                + (", or raise the context length" if source == SETTING_SOURCE else "")
            )
        return min(max_tokens, size - prompt_tokens)
