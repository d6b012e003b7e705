"""How full the open chat's context is ('1,234 / 32,768 tokens' beside Send), counted with the loaded tokenizer
on the worker pool against the model's maximum or the user's context length setting; files attached past what
the context can hold are refused, and so is a message that would not fit, before anything is sent."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal

from specchat.engine.owner.hosted import HostedEngine, HostedTokenizer
from specchat.engine.prompt import chat_prompt_ids

from ..job_events import JobHandlers
from ..tasks import TaskRunner
from .attachments import Attachment, with_attachments
from .composer import Composer
from .context_words import ContextLimit, context_of, fill_tip, fill_words, near_full, refusal, too_long

if TYPE_CHECKING:
    from ..engine_client import EngineClient
    from ..main_window import MainWindow

__all__ = ["ContextFill", "FillCount", "PromptParts", "byte_bound", "fill_for", "fill_words", "prompt_tokens"]

DEBOUNCE_MS = 300  # typing is counted once it pauses this long
# what a chat template may add beyond the text it is given: its framing around each message, and once its own
# preamble (a default system prompt, the tools instructions)
TEMPLATE_TOKENS_PER_MESSAGE = 64
TEMPLATE_TOKENS = 1024


@dataclass(frozen=True)
class PromptParts:
    """What the next reply's prompt is made of, besides the message being written."""

    history: tuple[Mapping[str, Any], ...] = ()  # the chat messages before it
    system_prompt: str = ""
    thinking: bool = False
    tools: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class FillCount:
    """One count: the prompt's tokens with `message` (the conversation alone when it is empty), and the files
    that fit or did not (with the tokens each needed)."""

    parts: PromptParts
    message: str
    tokens: int
    admitted: tuple[Attachment, ...] = ()
    refused: tuple[tuple[Attachment, int], ...] = ()


def prompt_tokens(tokenizer: HostedTokenizer, parts: PromptParts, message: str | None) -> int:
    """Tokens of the prompt a reply to `message` reads, as the engine builds it; message None: the conversation
    as it stands (no reply opened)."""
    history = list(parts.history)
    if message is None:
        if not history and not parts.system_prompt:
            return 0
        return len(_ids(tokenizer, parts, history, add_generation_prompt=False))
    return len(_ids(tokenizer, parts, [*history, {"role": "user", "content": message}]))


def _ids(tokenizer: HostedTokenizer, parts: PromptParts, messages: list, add_generation_prompt: bool = True) -> list:
    return chat_prompt_ids(
        tokenizer, messages, parts.system_prompt, parts.thinking, None, add_generation_prompt, tools=parts.tools
    )


def count_fill(
    tokenizer: HostedTokenizer,
    parts: PromptParts,
    text: str,
    checked: Sequence[Attachment],
    new: Sequence[Attachment],
    limit: int | None,
) -> FillCount:
    """Count the prompt with the text and the files; each new file is kept only while the prompt still fits."""
    admitted = list(checked)
    message = with_attachments(text, admitted)
    tokens = prompt_tokens(tokenizer, parts, message or None)
    refused: list[tuple[Attachment, int]] = []
    for attachment in new:
        trial = with_attachments(text, [*admitted, attachment])
        needed = prompt_tokens(tokenizer, parts, trial)
        if limit is None or needed < limit:
            admitted.append(attachment)
            message, tokens = trial, needed
        else:
            refused.append((attachment, needed - tokens))
    return FillCount(parts, message, tokens, tuple(admitted), tuple(refused))


def byte_bound(parts: PromptParts, message: str) -> int:
    """More tokens than the prompt for `message` can have (a tokenizer's token holds at least one byte): the
    bytes of every message, the system prompt and the tools, plus what a template adds around them."""
    texts = [json.dumps(dict(m), ensure_ascii=False) for m in parts.history] + [parts.system_prompt, message]
    tools = json.dumps([dict(t) for t in parts.tools], ensure_ascii=False) if parts.tools else ""
    size = sum(len(text.encode()) for text in texts) + len(tools.encode())
    return size + TEMPLATE_TOKENS_PER_MESSAGE * len(texts) + TEMPLATE_TOKENS


class ContextFill(QObject):
    """Counts the open chat's prompt after each change (debounced) and shows it in the composer; gates Send."""

    counted = Signal(object)  # FillCount, once shown

    def __init__(self, composer: Composer, tasks: TaskRunner, parts: Callable[[], PromptParts], parent=None):
        super().__init__(parent)
        self.composer, self.tasks, self.parts = composer, tasks, parts
        self.engine: HostedEngine | None = None
        self.window: ContextLimit | None = None  # the context counted against (None: unknown)
        self.client: EngineClient | None = None  # applies the context length setting to the engine (fill_for)
        self.latest: FillCount | None = None
        self.checked: set[Attachment] = set()  # files known to fit
        self._generation = 0  # counts of an earlier engine are dropped
        self._running = False
        self._again = False
        self._pending: tuple[str, Callable[[str], None]] | None = None  # a Send waiting for its count
        self.timer = QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self.timer.timeout.connect(self.count_now)
        composer.text.textChanged.connect(self.schedule)
        composer.tray.changed.connect(self.schedule)
        composer.send_gate = self.check_send

    @property
    def limit(self) -> int | None:
        """The tokens the context holds (None: unknown)."""
        return self.window.size if self.window is not None else None

    def set_engine(self, engine: HostedEngine | None) -> None:
        """A pair was loaded (or went): count with its tokenizer against its context."""
        setting = self.client.context_length if self.client is not None else None
        self.engine, self.window = engine, context_of(engine, setting)
        self._generation += 1
        self.latest = None
        self.count_now()

    def set_context_length(self, cap: int | None) -> None:
        """The user's context length (None: the model's maximum): the engine takes it after the jobs queued
        before (and each pair loaded later takes it as it loads); then the fill counts against it."""
        client = self.client
        if client is None or cap == client.context_length:
            return
        job = client.set_context_length(cap)
        job.event.connect(JobHandlers(ended=lambda: self.set_engine(client.engine)))

    def schedule(self, *_args: object) -> None:
        """Count again once the changes pause."""
        self.timer.start()

    def count_now(self) -> None:
        """Count the prompt now (after the count running, if one is)."""
        self.timer.stop()
        if self.tasks.pool.closed:  # the window is closing: its store may be closed already
            return
        if self.engine is None:
            self.composer.show_fill("")
            return
        if self._running:
            self._again = True
            return
        self._running, self._again = True, False
        engine, generation, limit, parts = self.engine, self._generation, self.limit, self.parts()
        text = self.composer.text.toPlainText().strip()
        files = self.composer.tray.attachments
        checked = [a for a in files if a in self.checked]
        new = [a for a in files if a not in self.checked]
        self.tasks.run(
            lambda: count_fill(engine.tokenizer, parts, text, checked, new, limit),
            lambda count: self._counted(generation, count),
            self._failed,
        )

    def _counted(self, generation: int, count: FillCount) -> None:
        self._running = False
        if generation != self._generation:
            self.count_now()
            return
        self._refuse(count)
        self.latest = count
        self.checked |= set(count.admitted)
        words, warning = fill_words(count, self.window)
        self.composer.show_fill(words, warning, fill_tip(count, self.window), near_full(count.tokens, self.window))
        self._decide_pending(count)
        if self._again or count.message != self.composer.message() or count.parts != self.parts():
            self.count_now()
        self.counted.emit(count)

    def _refuse(self, count: FillCount) -> None:
        """Take off the files that did not fit, saying why."""
        window = self.window
        if not count.refused or window is None:
            return
        room = window.size - count.tokens
        for attachment, _needed in count.refused:
            self.composer.tray.remove(attachment)
        self.composer.say(*(refusal(a, needed, room, window) for a, needed in count.refused))

    def _failed(self, message: str) -> None:
        """The template refused the chat: the label says so, and a waiting Send goes (the reply will say it too)."""
        self._running = False
        self.composer.show_fill("Tokens not counted", "", message)
        pending, self._pending = self._pending, None
        if pending is not None:
            pending[1](pending[0])

    # --- Send ---

    def check_send(self, message: str, deliver: Callable[[str], None]) -> None:
        """Let a message go when it fits the context; refuse it (saying the sizes) when it does not. When that is
        not known yet (it changed since the last count), count it now and decide then."""
        parts = self.parts()
        if self.engine is None or self.limit is None or byte_bound(parts, message) < self.limit:
            deliver(message)  # far from the limit (or none known): no count is needed
            return
        latest = self.latest
        if latest is not None and latest.parts == parts and latest.message == message:
            self._decide(latest.tokens, message, deliver)
            return
        self._pending = (message, deliver)
        self.count_now()

    def _decide_pending(self, count: FillCount) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            return
        if count.refused or pending[0] != self.composer.message():
            return  # the box changed (or a file was refused): nothing is sent; the box holds what is left
        if count.message == pending[0]:
            self._decide(count.tokens, *pending)
        else:
            self._pending = pending  # the count was of an earlier text: the next one decides

    def _decide(self, tokens: int, message: str, deliver: Callable[[str], None]) -> None:
        if self.window is not None and tokens >= self.window.size:
            self.composer.refuse_send(too_long(tokens, self.window))
        else:
            deliver(message)


def window_parts(window: MainWindow) -> PromptParts:
    """What the window's next reply reads besides the message: the open chat (up to the message being edited),
    its system prompt, the thinking switch and the tools the last reply was offered."""
    chat, composer = window.chat, window.composer
    history = chat.store.messages(chat.conversation_id) if chat.conversation_id is not None else []
    if composer.editing is not None:
        history = [m for m in history if m.position < composer.editing]
    thinking = composer.thinking.isChecked() and composer.thinking.isEnabled()
    tools = chat.tool_round.offered.function_specs()
    messages = chat.tool_round.chat_messages(history)
    return PromptParts(tuple(messages), chat.system_prompt(), thinking, tuple(tools))


def fill_for(window: MainWindow) -> ContextFill:
    """The window's context fill, counting again whenever what the next reply reads may have changed."""
    fill = ContextFill(window.composer, window.client.tasks, lambda: window_parts(window), window)
    fill.client = window.client
    window.client.loaded.connect(lambda _pair: fill.set_engine(window.client.engine))
    for signal in (
        window.chat.replyStarted,
        window.chat.replyFinished,
        window.chat.conversationSwitched,
        window.chat.storeReplaced,
        window.composer.thinkingToggled,
        window.panel.systemPromptChanged,
        window.sidebar.selected,
        window.transcript.editRequested,
    ):
        signal.connect(fill.schedule)
    return fill
