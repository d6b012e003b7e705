"""The server's side of the engine host: turn a parsed request into prompt tokens and a queued job."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, runtime_checkable

from jinja2 import TemplateError

from specchat.engine.config import GenerationConfig
from specchat.engine.json_types import JSONObject, JSONValue
from specchat.engine.owner import EngineHost, JobContext, JobEvent, JobHandle, JoinSpec, QueueState
from specchat.engine.owner.hosted import HostedEngine, HostedModel
from specchat.engine.prompt import ChatTemplate, chat_prompt_ids, first_out_of_range

from .errors import ApiError, bad_request, busy, shutting_down
from .requests import ApiRequest
from .tool_specs import tool_choice_note

NOT_LOADED = "No model is loaded on this server"
DEFAULT_MAX_BATCH = 8  # generations decoded together in one batch (1: one at a time)


class ServedModel(HostedModel, Protocol):
    """A loaded model as the server shows it: also its config.json."""

    @property
    def config(self) -> JSONObject: ...


@runtime_checkable
class ServedEngine(HostedEngine, Protocol):
    """What the server reads of the host's engine: a hosted engine whose models show their config.json, and
    its vocabulary (an Engine, or a cluster's)."""

    @property
    def target(self) -> ServedModel: ...

    @property
    def draft(self) -> ServedModel | None: ...

    @property
    def vocab_limit(self) -> int: ...  # token ids every loaded model can read: 0 up to this, exclusive

    def context_window(self) -> tuple[int, str] | None: ...  # the tokens a prompt and reply may fill, and why


@contextmanager
def template_errors() -> Iterator[None]:
    """A chat template that refuses the messages (its raise_exception, a prefill it cannot cut) as a 400."""
    try:
        yield
    except (TemplateError, ValueError) as exc:
        raise bad_request(f"The model's chat template cannot render these messages: {exc}", "messages") from None


def template_ids(
    tokenizer: ChatTemplate,
    messages: Sequence[Mapping[str, JSONValue]],
    *,
    system_prompt: str = "",
    enable_thinking: bool | None = None,
    template_kwargs: Mapping[str, JSONValue] | None = None,
    add_generation_prompt: bool = True,
    tools: Sequence[Mapping[str, JSONValue]] = (),
    system_note: str = "",
) -> list[int]:
    """chat_prompt_ids, its template's refusals as a 400."""
    with template_errors():
        return chat_prompt_ids(
            tokenizer,
            messages,
            system_prompt,
            enable_thinking,
            template_kwargs,
            add_generation_prompt,
            tools,
            system_note,
        )


class EngineBackend:
    """Serves the host's loaded engine under its folder's name; every request is one queued job, joinable:
    up to max_batch generations decode together in one batch (see engine/owner/batch_job.py)."""

    def __init__(self, host: EngineHost, max_queue: int = 8, max_batch: int = DEFAULT_MAX_BATCH):
        self.host, self.max_queue, self.max_batch = host, max_queue, max_batch
        self.requests_served = 0
        self.observers: list[Callable[[int, object], None]] = []  # (job id, engine event), on the engine thread
        self._count_lock = threading.Lock()
        self.stopping = threading.Event()  # set by begin_shutdown: every request ends with a 503 / an error chunk
        self._jobs: set[JobHandle[object]] = set()  # the requests' jobs not known to have ended

    @property
    def engine(self) -> ServedEngine:
        """The loaded engine (tokenizer and config are read from any thread; generation only in jobs)."""
        engine = self.loaded()
        if engine is None:
            raise ApiError(503, NOT_LOADED, "server_error", None, "model_not_loaded")
        return engine

    def loaded(self) -> ServedEngine | None:
        """The host's engine, None before the first load."""
        engine = self.host.engine
        return engine if engine is None or isinstance(engine, ServedEngine) else None

    def models(self) -> list[str]:
        """The ids a request may name: the target folder's name."""
        engine = self.loaded()
        return [Path(engine.target.name).name] if engine is not None else []

    def prompt_ids(
        self,
        request: ApiRequest,
        system_prompt: str = "",
        enable_thinking: bool | None = None,
        ids_param: str = "prompt",
    ) -> list[int]:
        """The request's tokens: the chat template over its messages, or the prompt encoded as is; every id
        checked against the vocabulary (a 400 naming `ids_param[index]` for a prompt of token ids)."""
        tokenizer = self.engine.tokenizer
        if request.kind == "chat":
            ids = template_ids(
                tokenizer,
                request.messages,
                system_prompt=system_prompt,
                enable_thinking=enable_thinking,
                template_kwargs=request.template_kwargs,
                tools=request.offered_tools,
                system_note=tool_choice_note(request.tool_choice),
            )
        elif isinstance(request.prompt, tuple):
            ids = list(request.prompt)
        else:
            ids = list(tokenizer.encode(request.prompt))
        self.check_ids(ids, ids_param if isinstance(request.prompt, tuple) and request.kind != "chat" else "messages")
        self.check_context(len(ids))
        return ids

    def check_ids(self, ids: Sequence[object], param: str) -> None:
        """400 naming the index when an id is not a token id of the loaded models (before any model work:
        an id past the embedding table is read past its end)."""
        limit = self.engine.vocab_limit
        bad = first_out_of_range(ids, limit)
        if bad is not None:
            raise bad_request(
                f"{param}[{bad}] is {ids[bad]!r}, which is not a token id of this model: ids run from 0 to {limit - 1}",
                f"{param}[{bad}]",
            )

    def check_context(self, prompt_tokens: int) -> None:
        """400 naming both numbers when the prompt does not fit the context (the model's, or the server's
        --context-length below it)."""
        window = self.engine.context_window()
        if window is not None and prompt_tokens >= window[0]:
            raise bad_request(
                f"The prompt has {prompt_tokens} tokens but the context holds {window[0]} ({window[1]})",
                "messages",
                "context_length_exceeded",
            )

    def start(
        self, prompt_ids: list[int], cfg: GenerationConfig, listener: Callable[[JobEvent], None]
    ) -> JobHandle[object]:
        """Queue the generation as a joinable job; 503 when more than max_queue requests would wait beyond the
        batch, this one included, or the server stops (max_queue 0: a request is served only when it can start
        at once). listener gets the job's events."""
        if self.stopping.is_set():
            raise shutting_down()
        join = self.join_spec(prompt_ids, cfg)
        state = self.host.state()
        waiting = self.waiting_after(state, join is not None)
        if waiting > self.max_queue:
            raise busy(retry_after_s=max(1, waiting), queued=len(state.queued))
        with self._count_lock:
            self.requests_served += 1
        handle = self.host.submit("api", self.generation_work(prompt_ids, cfg), listener, join)
        with self._count_lock:
            self._jobs = {h for h in self._jobs if not h.done} | {handle}
        return handle

    def waiting_after(self, state: QueueState, joinable: bool) -> int:
        """How many requests would wait, a new one included, if it were queued now: the queued ones and it,
        less what starts at the host's next step (the batch's free rows for a joinable request, or the one
        job an idle host starts)."""
        starts = max(0, self.max_batch - len(state.running_batch)) if joinable else 0
        if state.running is None and not state.running_batch:
            starts = max(starts, 1)  # an idle host starts the front job at once
        return max(0, len(state.queued) + 1 - starts)

    def begin_shutdown(self) -> None:
        """The server is stopping: refuse new requests (503) and stop every request's job now."""
        self.stopping.set()
        with self._count_lock:
            jobs = list(self._jobs)
        for handle in jobs:
            if not handle.done:
                self.host.cancel(handle)

    def join_spec(self, prompt_ids: list[int], cfg: GenerationConfig) -> JoinSpec | None:
        """What lets the generation join a batch; None when it must run generation_work (batching off, or a
        backend with its own work: a cluster's lockstep, a test's script). The host still runs the work
        alone when the batch decoder refuses the engine or the config."""
        if self.max_batch <= 1 or type(self).generation_work is not EngineBackend.generation_work:
            return None
        return JoinSpec(tuple(prompt_ids), cfg, tuple(self.observers), self.max_batch)

    def generation_work(self, prompt_ids: list[int], cfg: GenerationConfig) -> Callable[[JobContext], None]:
        """The job that streams one generation (a cluster backend runs it on every rank)."""
        observers = list(self.observers)

        def work(ctx: JobContext) -> None:
            for event in ctx.engine.stream(prompt_ids, cfg, ctx.cancel):
                ctx.emit(event)
                for observe in observers:
                    observe(ctx.handle.id, event)

        return work

    def extra_status(self) -> dict[str, object]:  # JSON; a cluster's override declares dict[str, object]
        """More fields for /specchat/v1/status (a cluster adds its ranks)."""
        return {}

    def cancel(self, handle: JobHandle[object]) -> None:
        """Stop a job: dropped from the queue, or stopped at the next round."""
        self.host.cancel(handle)
