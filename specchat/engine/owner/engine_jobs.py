"""The engine's own jobs for an EngineHost: load a pair (transactionally) and stream a reply. No Qt."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import mlx.core as mx

from ..config import GenerationConfig
from ..engine import Engine
from ..errors import IncompatibleDraftError
from ..events import Event
from ..json_types import JSONObject, JSONValue
from ..loading import LoadedModel, fitted_context_length, load_model
from ..prompt import chat_prompt_ids
from .handle import JobContext


@dataclass(frozen=True)
class LoadedPair:
    """What the loaded engine offers, for the views."""

    target: str
    draft: str | None
    available_modes: dict[str, str | None]
    decode: Callable[[list[int]], str]
    draft_error: str | None = None
    memory_bytes: int = 0
    remote: str | None = None  # the server's URL when the engine is a SpecChat server elsewhere
    dflash: str | None = None  # the DFlash drafter folder loaded beside the target


@dataclass(frozen=True)
class LoadMessage:
    """A load job's progress: what it is loading now."""

    text: str


def load_pair_job(
    target: str | Path,
    draft: str | Path | None = None,
    keep_target_on_bad_draft: bool = True,
    dflash: str | Path | None = None,
) -> Callable[[JobContext], LoadedPair]:
    """A job that loads a target (and draft, and DFlash drafter) beside the current engine and replaces it
    only on success.

    While it loads, the previous engine stays installed; a failure raises and leaves it in place.
    A draft that cannot serve the target is refused with a reason (the target still loads) unless
    keep_target_on_bad_draft is False, when the whole load fails.
    """

    def work(ctx: JobContext) -> LoadedPair:
        ctx.emit(LoadMessage(f"Loading {Path(target).name}…"))
        target_model = load_model(target)
        draft_model: LoadedModel | None = None
        draft_error: str | None = None
        if draft:
            ctx.emit(LoadMessage(f"Loading draft {Path(draft).name}…"))
            draft_model = load_model(draft)
        if dflash:
            ctx.emit(LoadMessage(f"Loading DFlash drafter {Path(dflash).name}…"))
        try:
            engine = Engine(target_model, draft_model, dflash)
        except IncompatibleDraftError as exc:
            if not keep_target_on_bad_draft:
                raise
            draft_error, draft_model = str(exc), None
            engine = Engine(target_model, None, dflash)
        ctx.host.install(engine)
        mx.clear_cache()
        return LoadedPair(
            str(target_model.path),
            str(draft_model.path) if draft_model else None,
            engine.available_modes(),
            engine.tokenizer.decode,
            draft_error,
            mx.get_active_memory(),
            dflash=str(dflash) if dflash else None,
        )

    return work


def adopt_job(engine: Engine) -> Callable[[JobContext], LoadedPair]:
    """A job that makes an engine built elsewhere (a test, a script) the host's current one."""

    def work(ctx: JobContext) -> LoadedPair:
        engine.adopt()
        ctx.host.install(engine)
        return LoadedPair(
            str(engine.target.path),
            str(engine.draft.path) if engine.draft else None,
            engine.available_modes(),
            engine.tokenizer.decode,
            None,
            mx.get_active_memory(),
        )

    return work


def reply_job(
    messages: Sequence[Mapping[str, JSONValue]],
    cfg: GenerationConfig,
    system_prompt: str = "",
    enable_thinking: bool = False,
    tools: Sequence[Mapping[str, JSONValue]] = (),
) -> Callable[[JobContext], Iterator[Event]]:
    """A job that streams one chat reply on the current engine (its engine events are the job's progress);
    tools (OpenAI-style function specs, the app's MCP tools) go to the chat template."""
    tools = tuple(dict(t) for t in tools)

    def work(ctx: JobContext) -> Iterator[Event]:
        engine = ctx.engine
        ids = chat_prompt_ids(engine.tokenizer, list(messages), system_prompt, enable_thinking, tools=tools)
        yield from engine.stream(ids, cfg, ctx.cancel)

    return work


def prompt_job(prompt_ids: list[int], cfg: GenerationConfig) -> Callable[[JobContext], Iterator[Event]]:
    """A job that streams a generation from token ids (the command line, a server)."""

    def work(ctx: JobContext) -> Iterator[Event]:
        yield from ctx.engine.stream(list(prompt_ids), cfg, ctx.cancel)

    return work


def learn_job(data: JSONObject) -> Callable[[JobContext], None]:
    """A job that starts the loaded engine's controllers from saved knowledge (a remote engine keeps its own)."""

    def work(ctx: JobContext) -> None:
        engine = ctx.engine
        if isinstance(engine, Engine):
            engine.learn(data)

    return work


def knowledge_job() -> Callable[[JobContext], JSONObject]:
    """A job that returns what the loaded engine's controllers learned ({} for a remote engine)."""

    def work(ctx: JobContext) -> JSONObject:
        engine = ctx.engine
        return engine.knowledge() if isinstance(engine, Engine) else {}

    return work


def context_length_job(cap: int | None, fit: bool = False) -> Callable[[JobContext], int | None]:
    """A job that caps the loaded engine's context at cap tokens (None: the model's own limit): ConfigError when
    the model holds fewer, or with fit (a setting kept across models) the model's own limit then. It returns the
    window's size; nothing is done, and None returned, with no engine or a remote one (it keeps its own)."""

    def work(ctx: JobContext) -> int | None:
        engine = ctx.host.engine
        if not isinstance(engine, Engine):
            return None
        engine.context_length = fitted_context_length(cap, engine.target.config) if fit else cap
        window = engine.context_window()
        return window[0] if window is not None else None

    return work
