"""A chat: messages -> prompt via the model's chat template; caches reused across turns."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence

from .config import GenerationConfig
from .engine import Engine
from .events import Event, Finished
from .json_types import JSONValue
from .prompt import chat_prompt_ids


class ChatSession:
    """Messages of one conversation on one engine; the engine keeps the shared prefix cached."""

    def __init__(self, engine: Engine, system_prompt: str | None = None, enable_thinking: bool = False):
        self.engine = engine
        self.system_prompt = system_prompt
        self.enable_thinking = enable_thinking
        self.messages: list[dict[str, str]] = []

    def prompt_ids(self, messages: Sequence[Mapping[str, JSONValue]] | None = None) -> list[int]:
        """Token ids of the conversation, ending with the assistant's turn opening."""
        messages = self.messages if messages is None else messages
        return chat_prompt_ids(self.engine.tokenizer, messages, self.system_prompt or "", self.enable_thinking)

    def send(self, text: str, cfg: GenerationConfig, cancel: threading.Event | None = None) -> Iterator[Event]:
        """Add a user message and stream the assistant's reply; the reply is added when finished."""
        self.messages.append({"role": "user", "content": text})
        yield from self._reply(cfg, cancel)

    def regenerate(self, cfg: GenerationConfig, cancel: threading.Event | None = None) -> Iterator[Event]:
        """Drop the last assistant reply and generate it again."""
        if self.messages and self.messages[-1]["role"] == "assistant":
            self.messages.pop()
        yield from self._reply(cfg, cancel)

    def edit(
        self, index: int, text: str, cfg: GenerationConfig, cancel: threading.Event | None = None
    ) -> Iterator[Event]:
        """Replace user message `index`, forget everything after it and reply again."""
        if self.messages[index]["role"] != "user":
            raise ValueError(f"message {index} is not a user message")
        self.messages = self.messages[:index] + [{"role": "user", "content": text}]
        yield from self._reply(cfg, cancel)

    def _reply(self, cfg: GenerationConfig, cancel: threading.Event | None) -> Iterator[Event]:
        for event in self.engine.stream(self.prompt_ids(), cfg, cancel):
            if isinstance(event, Finished):
                self.messages.append({"role": "assistant", "content": event.text})
            yield event
