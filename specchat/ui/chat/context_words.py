"""The context fill's words: the label beside Send, its tooltip, and why a message or a file is refused, each
naming what sets the limit (the model's maximum, or the user's context length setting below it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specchat.engine.loading import SETTING_SOURCE, context_limit, context_window
from specchat.engine.owner.hosted import HostedEngine

if TYPE_CHECKING:
    from .attachments import Attachment
    from .context_fill import FillCount

NEAR_FULL = 0.9  # from this share of the context on, the label warns (colour and tooltip) before anything is sent
RAISE_IT = "raise the context length in Preferences"


@dataclass(frozen=True)
class ContextLimit:
    """The context a chat may fill: its size and where that comes from, what the model holds, and the user's
    context length setting (None: the model's maximum)."""

    size: int
    source: str = "max_position_embeddings in config.json"
    model: int | None = None
    setting: int | None = None

    @property
    def by_setting(self) -> bool:
        """True when the user's setting, below what the model holds, sets the size."""
        return self.source == SETTING_SOURCE

    def holds(self) -> str:
        """What a refusal names as the limit: 'the model holds' or 'your context length setting allows'."""
        return f"{SETTING_SOURCE} allows" if self.by_setting else "the model holds"

    def way_out(self) -> str:
        """What the user can do once the chat no longer fits."""
        return f"start a new chat or {RAISE_IT}" if self.by_setting else "start a new chat"

    def where(self) -> str:
        """Where the size comes from, for the tooltip."""
        if self.by_setting:
            held = f"; the model holds {self.model:,}" if self.model else ""
            return f"{SETTING_SOURCE}, in Preferences{held}"
        if self.setting is not None:  # a setting at or above what this model holds: its maximum applies
            return f"{self.source}; {SETTING_SOURCE} ({self.setting:,}) is not below it"
        return self.source


def context_of(engine: HostedEngine | None, setting: int | None = None) -> ContextLimit | None:
    """The loaded engine's context: its window (the setting applied), what its model holds and the setting;
    None when no engine is loaded or its config gives no length."""
    config = getattr(engine.target, "config", None) if engine is not None else None
    if not isinstance(config, Mapping):
        return None
    window_of = getattr(engine, "context_window", None)
    window = window_of() if callable(window_of) else context_window(config, None)
    if window is None:
        return None
    model = context_limit(config)
    return ContextLimit(window[0], window[1], model[0] if model else None, setting)


def as_limit(limit: ContextLimit | int | None) -> ContextLimit | None:
    """A limit given as a bare size is the model's own."""
    return ContextLimit(limit) if isinstance(limit, int) else limit


def near_full(tokens: int, limit: ContextLimit | int | None) -> bool:
    """True when the prompt fills NEAR_FULL of the context or more but still fits."""
    window = as_limit(limit)
    return window is not None and NEAR_FULL * window.size <= tokens < window.size


def fill_words(count: FillCount, limit: ContextLimit | int | None) -> tuple[str, str]:
    """The label's words, and the warning when the prompt does not fit ('' when it does)."""
    window = as_limit(limit)
    if window is None:
        return f"{count.tokens:,} tokens", ""
    words = f"{count.tokens:,} / {window.size:,} tokens"
    if count.tokens < window.size:
        return words, ""
    if count.message:
        return words, too_long(count.tokens, window)
    return words, f"This chat has {count.tokens:,} tokens; {window.holds()} {window.size:,}: {window.way_out()}"


def too_long(tokens: int, limit: ContextLimit | int) -> str:
    """Why a message is not sent."""
    window = ContextLimit(limit) if isinstance(limit, int) else limit
    return f"This message would need {tokens:,} tokens; {window.holds()} {window.size:,}"


def refusal(attachment: Attachment, needed: int, room: int, limit: ContextLimit | int) -> str:
    """Why a file was not attached, with the sizes."""
    window = ContextLimit(limit) if isinstance(limit, int) else limit
    left = f"room for {room:,} more" if room > 0 else "no room left"
    setting = f", {SETTING_SOURCE}" if window.by_setting else ""
    return (
        f"{attachment.name} was not attached: it needs {needed:,} tokens and the context has {left} "
        f"(of {window.size:,}{setting})"
    )


def fill_tip(count: FillCount, limit: ContextLimit | None) -> str:
    """The label's tooltip: what was counted, the room left for the reply and where the limit comes from; near
    the end, that a reply stops when the context is full."""
    what = "the chat, its system prompt and the message being written" if count.message else "the chat so far"
    tip = f"Tokens of {what}, as the model reads them"
    if limit is None or count.tokens >= limit.size:
        return tip
    tip += f"; {limit.size - count.tokens:,} left for the reply ({limit.where()})"
    if near_full(count.tokens, limit):
        tip += f". Nearly full: a reply stops when the context is full; {limit.way_out()}"
    return tip
