"""GenerationConfig: the knobs of one generation, validated on creation against one table of limits."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from .errors import ConfigError
from .logprobs import MAX_TOP_LOGPROBS
from .modes import MODES, SpecMode

if TYPE_CHECKING:
    from .grammar import Grammar  # llguidance: imported when a config carries a grammar

AUTO = "auto"
MTP_MAX_DEPTH = 4
# A DFlash block drafts block_size - 1 tokens in one pass (15 for the published -b16 drafters); a round
# drafts min(K, block_size - 1). Its own limit, outside LIMITS: settings and spin boxes do not offer it yet.
DFLASH_MAX_DRAFT_TOKENS = 15
AUTO_MAX_DRAFT_TOKENS = 16  # the deepest an auto-K round drafts (draft and lookup modes); drafts stop early when unsure
_V = TypeVar("_V")


@dataclass(frozen=True)
class Limit:
    """The values one setting accepts: low..high (low excluded when low_open), or the off value.

    Every value a Limit accepts gives a working generation; the settings file, the spin boxes, the
    CLI and the sweep all read their ranges and messages from LIMITS below.
    """

    label: str
    low: float
    high: float
    integer: bool = False
    low_open: bool = False
    off: float | None = None  # a value below low that switches the setting off
    off_means: str = "off"
    step: float = 1
    decimals: int = 0

    def allowed(self) -> str:
        """The accepted values in words: "between 0.01 and 2, or 0 (greedy)"."""
        low = (
            f"above {_num(self.low)} and up to {_num(self.high)}"
            if self.low_open
            else f"between {_num(self.low)} and {_num(self.high)}"
        )
        whole = "a whole number " if self.integer else ""
        return f"{whole}{low}" + (f", or {_num(self.off)} ({self.off_means})" if self.off is not None else "")

    def accepts(self, value: object) -> bool:
        """True when value is a number of the right kind inside the limit."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.integer and not isinstance(value, int):
            return False
        if isinstance(value, float) and not math.isfinite(value):  # an int is finite (and may be past any float)
            return False
        if self.off is not None and value == self.off:
            return True
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high

    def check(self, value: _V) -> _V:
        """Return value when accepted; otherwise raise ConfigError naming the setting and its range."""
        if not self.accepts(value):
            raise ConfigError(self.message(value))
        return value

    def message(self, value: object) -> str:
        """The one-line complaint about a rejected value."""
        return f"{self.label} must be {self.allowed()}, got {value!r}"

    def parse(self, text: str) -> float | int:
        """A command-line value as the number it names; ConfigError (naming the range) unless accepted."""
        kind = int if self.integer else float
        try:
            value = kind(text)
        except ValueError:
            raise ConfigError(
                f"{self.label} must be {'a whole number' if self.integer else 'a number'}, got {text!r}"
            ) from None
        return self.check(value)

    def arg_type(self) -> Callable[[str], float | int]:
        """An argparse type: parse(), its ConfigError re-raised as the one line argparse prints."""

        def parse(text: str) -> float | int:
            try:
                return self.parse(text)
            except ConfigError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None

        parse.__name__ = self.label  # argparse names the type in some messages
        return parse

    @property
    def spin_min(self) -> float:
        """The smallest value a spin box shows (the off value, or the first step above an open low)."""
        if self.off is not None:
            return self.off
        return self.low + 10**-self.decimals if self.low_open else self.low


def _num(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


LIMITS: dict[str, Limit] = {
    "num_draft_tokens": Limit("draft tokens (K)", 1, 16, integer=True),
    "mtp_depth": Limit("MTP depth (K)", 1, MTP_MAX_DEPTH, integer=True),
    "max_tokens": Limit("max tokens", 1, 32768, integer=True, step=64),
    # Below 0.01 the spin boxes (2 decimals) would show a sampling temperature as 0, greedy.
    "temperature": Limit("temperature", 0.01, 2.0, off=0.0, off_means="greedy", step=0.05, decimals=2),
    "top_p": Limit("top-p", 0.0, 1.0, low_open=True, step=0.05, decimals=2),
    "top_k": Limit("top-k", 1, 1000, integer=True, off=0),
    # min-p 1 keeps only the likeliest token(s): mlx-lm's range, and it samples like greedy.
    "min_p": Limit("min-p", 0.0, 1.0, step=0.01, decimals=2),
    "seed": Limit("seed", 0, 2**64 - 1, integer=True),  # MLX's random keys take an unsigned 64-bit seed
    # How many top alternatives each token's logprob comes with (OpenAI's top_logprobs range).
    "logprobs": Limit("logprobs (top alternatives)", 0, MAX_TOP_LOGPROBS, integer=True),
    # A cap on the tokens a prompt and its reply may fill (the engine's context_length; None: the model's own).
    "context_length": Limit("context length", 256, 1_048_576, integer=True, step=1024),
}
DFLASH_LIMIT = Limit("DFlash draft tokens (K)", 1, DFLASH_MAX_DRAFT_TOKENS, integer=True)
SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "min_p", "max_tokens")


def check_draft_tokens(mode: str, k: object) -> None:
    """Raise ConfigError unless k is "auto" or a K that mode accepts (MTP drafts at most MTP_MAX_DEPTH)."""
    name = "mtp_depth" if mode == SpecMode.MTP else "num_draft_tokens"
    limit = DFLASH_LIMIT if mode == SpecMode.DFLASH else LIMITS[name]
    if k != AUTO and not limit.accepts(k):
        raise ConfigError(f"{limit.label} must be {limit.allowed()} or {AUTO!r}, got {k!r}")


@dataclass(frozen=True)
class GenerationConfig:
    """Mode, draft length and sampling settings for one generation."""

    mode: SpecMode = SpecMode.BASELINE  # a string naming a member is taken as it
    num_draft_tokens: int | str = 4  # or "auto": chosen each round (see autok.py)
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    seed: int | None = None
    # MTP only: each head step sees only its own position, as mlx-optiq drafts (the default: measured
    # level with or ahead of mlx-optiq), or the head attends over the whole sequence through its own KV
    # cache, as it was trained (one head pass per new token: costs more where compute scales with tokens).
    mtp_history: bool = False
    # The reply follows it (JSON schema, any JSON object, Lark): checked by llguidance when the generation
    # starts; a dict (asdict() of one, over the wire) is taken as the Grammar it describes.
    grammar: Grammar | None = None
    # None: off. 0..20: each emitted token carries its logprob under the target (see logprobs.py) and
    # that many likeliest alternatives; TextChunk.logprobs holds them.
    logprobs: int | None = None
    # Text the reply already begins with (an assistant prefill the prompt continues): the grammar reads it
    # before the first token, so a response format goes on from it instead of starting over.
    grammar_prefix: str = ""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        object.__setattr__(self, "mode", SpecMode(self.mode))  # frozen: set once, here
        check_draft_tokens(self.mode, self.num_draft_tokens)
        for name in SAMPLING_FIELDS:
            LIMITS[name].check(getattr(self, name))
        if self.seed is not None:
            LIMITS["seed"].check(self.seed)
        if self.logprobs is not None:
            LIMITS["logprobs"].check(self.logprobs)
        if self.grammar is not None:
            from .grammar import Grammar

            object.__setattr__(self, "grammar", Grammar.from_value(self.grammar))  # frozen: set once, here

    @property
    def auto_k(self) -> bool:
        """True when the draft length is chosen each round."""
        return self.num_draft_tokens == AUTO

    @property
    def max_draft_tokens(self) -> int:
        """The largest K a round may use."""
        if isinstance(self.num_draft_tokens, int):
            return self.num_draft_tokens
        if self.mode == SpecMode.DFLASH:
            return DFLASH_MAX_DRAFT_TOKENS
        return MTP_MAX_DEPTH if self.mode == SpecMode.MTP else AUTO_MAX_DRAFT_TOKENS  # "auto", the only str accepted

    @property
    def greedy(self) -> bool:
        """True when decoding is deterministic argmax (temperature 0)."""
        return self.temperature == 0
