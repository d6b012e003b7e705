"""What a host's engine offers every job, whichever engine it is: a local Engine, a RemoteEngine (a
SpecChat server elsewhere) or a cluster's. A job that needs more (the batch decoder, a sweep's caches)
narrows it with isinstance."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

from ..config import GenerationConfig
from ..events import Event
from ..prompt import ChatTemplate

if TYPE_CHECKING:
    from ..engine import GenerationResult


class HostedTokenizer(ChatTemplate, Protocol):
    """Encode, decode and the chat template: what every engine's tokenizer offers."""

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Iterable[int]) -> str: ...


class HostedModel(Protocol):
    """A loaded model as jobs show it: its name, and where it is (a folder, or a server's URL and name)."""

    @property
    def name(self) -> str: ...

    @property
    def path(self) -> object: ...  # a Path locally, a str for a model on a server


class HostedEngine(Protocol):
    """The engine jobs run on."""

    @property
    def tokenizer(self) -> HostedTokenizer: ...

    @property
    def target(self) -> HostedModel: ...

    @property
    def draft(self) -> HostedModel | None: ...

    def available_modes(self) -> dict[str, str | None]: ...

    def stream(
        self, prompt_ids: list[int], cfg: GenerationConfig, cancel: threading.Event | None = None
    ) -> Iterator[Event]: ...

    def generate(
        self, prompt_ids: list[int], cfg: GenerationConfig, cancel: threading.Event | None = None
    ) -> GenerationResult: ...

    def reset(self) -> None: ...

    def adopt(self) -> None: ...
