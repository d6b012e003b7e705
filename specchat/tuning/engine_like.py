"""What tuning asks of an engine: the local Engine and a server's RemoteEngine both fit (no Qt)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterator

    from specchat.engine.config import GenerationConfig
    from specchat.engine.engine import GenerationResult
    from specchat.engine.events import Event


class TuningEngine(Protocol):
    """A loaded pair that generates from token ids: available modes, generate, reset and a tokenizer."""

    @property
    def tokenizer(self) -> Any: ...  # mlx-lm's TokenizerWrapper (untyped) or a server's RemoteTokenizer

    def available_modes(self) -> dict[str, str | None]: ...

    def generate(
        self, prompt_ids: list[int], cfg: GenerationConfig, cancel: threading.Event | None = None
    ) -> GenerationResult: ...

    def stream(
        self, prompt_ids: list[int], cfg: GenerationConfig, cancel: threading.Event | None = None
    ) -> Iterator[Event]: ...

    def reset(self) -> None: ...
