"""What the engine asks of a tokenizer: mlx-lm's TokenizerWrapper is untyped (it forwards most names to a
transformers tokenizer), so these Protocols name the parts the engine uses."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Protocol

from .prompt import ChatTemplate


class Vocabulary(Protocol):
    """A tokenizer's token -> id map, added tokens included (what the compatibility checks compare)."""

    def get_vocab(self) -> dict[str, int]: ...


class Detokenizer(Protocol):
    """mlx-lm's streaming detokenizer: tokens in, the text they completed out."""

    def reset(self) -> None: ...

    def add_token(self, token: int) -> None: ...

    def finalize(self) -> None: ...

    @property
    def last_segment(self) -> str: ...  # reading it advances the detokenizer


class Tokenizer(Vocabulary, ChatTemplate, Protocol):
    """mlx-lm's TokenizerWrapper as the engine uses it."""

    @property
    def eos_token_ids(self) -> Collection[int]: ...

    @property
    def detokenizer(self) -> Detokenizer: ...  # a fresh one each time it is read

    def encode(self, text: str, *, add_special_tokens: bool = ...) -> list[int]: ...

    def decode(self, ids: Iterable[int], *, skip_special_tokens: bool = ...) -> str: ...
