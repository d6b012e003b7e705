"""Engine: load a target (and a draft), generate with events, keep caches across calls."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from .auto_drafter import AutoDrafter
from .autok import AutoK
from .carry import BatchCarry
from .compat import ensure_compatible
from .config import GenerationConfig
from .dflash import DFlashDrafter
from .dflash_load import load_dflash
from .drafters import NO_TAPS, Drafter, DraftModelDrafter
from .errors import ConfigError, EngineError, EngineThreadError, error_from, error_kind, user_message
from .events import Event, Failed, Finished, GenerationStats, PrefillProgress, TextChunk
from .hooks import hook_problems
from .json_types import JSONObject
from .knowledge import batch_knowledge, knowledge_of, learn_all, learn_batch
from .loading import LoadedModel, load_model, vocab_size
from .lookup import PromptLookupDrafter
from .modes import SpecMode, StopReason
from .mtp import MtpDrafter, attach_head
from .mtp_detect import MtpSupport, detect_mtp
from .plain import baseline_steps
from .request_checks import RequestChecks
from .round import LoopContext, Step
from .runner import ModelRunner, common_prefix_len
from .sampling import Sampler
from .speculative import speculative_steps
from .stats import StatsRecorder
from .tokenizer import Detokenizer, Tokenizer


@dataclass(frozen=True)
class GenerationResult:
    """What generate() returns: tokens without the stop token, their text, and the stats."""

    tokens: list[int]
    text: str
    stats: GenerationStats
    cancelled: bool = False


class Engine(RequestChecks):
    """A target model, an optional draft model, and their caches kept between calls."""

    def __init__(self, target: LoadedModel, draft: LoadedModel | None = None, dflash: str | Path | None = None):
        self._owner = threading.current_thread()  # MLX arrays belong to the thread that made them
        self.target = target
        self.draft = draft
        self.runner = ModelRunner(target.model, target.name)
        self.drafters: dict[str, Drafter] = {"lookup": PromptLookupDrafter(vocab_size(target))}
        self.auto_k: dict[str, AutoK] = {}  # per mode; its cost and acceptance estimates carry over
        self.mtp = self._attach_mtp(target)
        if draft is not None:
            ensure_compatible(target.tokenizer, draft.tokenizer, target.name, draft.name)
            self.drafters["draft"] = DraftModelDrafter(ModelRunner(draft.model, draft.name))
        if dflash is not None:  # a DFlash drafter folder: ModelLoadError when it cannot draft for this target
            self.drafters["dflash"] = DFlashDrafter(self.runner, load_dflash(dflash, target))
        self.drafters["auto"] = AutoDrafter(self._model_drafter(), PromptLookupDrafter(vocab_size(target)))
        self.hook_problems = hook_problems(self.runner, self.drafters)  # upstream internals that do not fit
        self.batch_carry = BatchCarry()  # what outlives one batch (engine/batch)
        self._context_length: int | None = None  # the user's cap on the context (None: the model's own)

    @classmethod
    def load(cls, target: str | Path, draft: str | Path | None = None, dflash: str | Path | None = None) -> Engine:
        """Load a target, an optional draft (local mlx-lm model folders) and an optional DFlash drafter folder."""
        return cls(load_model(target), load_model(draft) if draft else None, dflash)

    @property
    def tokenizer(self) -> Tokenizer:
        """The target's tokenizer (encode / decode / apply_chat_template)."""
        return self.target.tokenizer

    def available_modes(self) -> dict[str, str | None]:
        """Each mode and why it is unavailable (None when it can be used)."""
        modes = {
            "baseline": None,
            "draft": None if "draft" in self.drafters else "no draft model loaded",
            "mtp": None if "mtp" in self.drafters else f"no MTP head: {self.mtp.reason}",
            "lookup": None,
            "dflash": None if "dflash" in self.drafters else "no DFlash drafter loaded",
            "auto": None,  # prompt lookup and whichever model drafter is loaded
        }
        return {mode: reason or self.hook_problems.get(mode) for mode, reason in modes.items()}

    def knowledge(self) -> JSONObject:
        """What the controllers learned on this pair (costs, acceptance, confidence; knowledge.py), the batch
        controller's cost table among them."""
        return {
            **knowledge_of(self.auto_k, self._auto_drafter()),
            "batch": batch_knowledge(self.batch_carry.controller),
        }

    def learn(self, data: JSONObject) -> None:
        """Start the controllers from what an earlier session learned on this pair and machine (the batch
        controller is made for it when none is yet)."""
        learn_all(self.auto_k, self._auto_drafter(), data)
        self.batch_carry.controller = learn_batch(self.batch_carry.controller, data)

    def _auto_drafter(self) -> AutoDrafter | None:
        drafter = self.drafters.get("auto")
        return drafter if isinstance(drafter, AutoDrafter) else None

    def _model_drafter(self) -> Drafter | None:
        """The drafter Auto turns to where prompt lookup has no match: the draft model, else the MTP head."""
        return self.drafters.get("draft") or self.drafters.get("mtp")

    def _attach_mtp(self, target: LoadedModel) -> MtpSupport:
        """Attach the target's MTP head when its folder has one; the support says why not otherwise."""
        support = detect_mtp(target.path)
        if not support.available:
            return support
        try:
            attach_head(target.model, target.tokenizer, target.path, support)
        except EngineError as exc:
            return MtpSupport(False, str(exc), support.source, support.num_layers)
        self.drafters["mtp"] = MtpDrafter(self.runner)
        return support

    def generate(
        self, prompt_ids: list[int], cfg: GenerationConfig, cancel: threading.Event | None = None
    ) -> GenerationResult:
        """Run stream() to the end and return the result; raises the failure's own error class."""
        return result_of(self.stream(prompt_ids, cfg, cancel))

    def stream(
        self, prompt_ids: list[int], cfg: GenerationConfig, cancel: threading.Event | None = None
    ) -> Iterator[Event]:
        """Yield TextChunk / RoundResult / PrefillProgress events, then Finished or Failed."""
        tokens: list[int] = []
        self.check_thread()
        try:
            yield from self._stream(list(prompt_ids), cfg, cancel or threading.Event(), tokens)
        except Exception as exc:  # the caller gets an event, never a dead thread
            if not isinstance(exc, ConfigError):  # refused before any model work: the caches are intact
                self.reset()
            yield Failed(user_message(exc), error_kind(exc), tuple(tokens))

    @property
    def owner(self) -> threading.Thread:
        """The thread that created or adopted the engine: the only one that may run it."""
        return self._owner

    def check_thread(self) -> None:
        """Raise EngineThreadError unless called on the owner thread.

        MLX keeps unevaluated arrays on the stream of the thread that made them: another thread
        cannot evaluate them ("There is no Stream(cpu, N) in current thread"). One thread owns the
        engine (the engine host's); a call from elsewhere is a bug in the caller, refused loudly.
        """
        current = threading.current_thread()
        if current is not self._owner:
            raise EngineThreadError(
                f"the engine belongs to thread {self._owner.name!r} and was called from "
                f"{current.name!r}: submit the work as a job to its owner instead"
            )

    def adopt(self) -> None:
        """Make the calling thread the owner; the caches start afresh (their arrays belong to the old one)."""
        self._owner = threading.current_thread()
        self.reset()

    def reset(self) -> None:
        """Drop every cache; the next call prefills from scratch."""
        self.check_thread()
        self.runner.reset()
        for drafter in self.drafters.values():
            drafter.reset()
        self.batch_carry.clear()

    @property
    def draft_runner(self) -> ModelRunner | None:
        """The draft model's runner, None without a draft model."""
        drafter = self.drafters.get("draft")
        return drafter.runner if isinstance(drafter, DraftModelDrafter) else None

    def _controller(self, cfg: GenerationConfig, drafter: Drafter) -> AutoK | None:
        if not cfg.auto_k:
            return None
        controller = self.auto_k.setdefault(cfg.mode, AutoK(k_max=cfg.max_draft_tokens))
        controller.k_max = cfg.max_draft_tokens
        controller.for_drafter(drafter)  # a block drafter's round costs one pass at any K
        controller.new_reply()
        return controller

    def _drafter_for(self, cfg: GenerationConfig) -> Drafter | None:
        if cfg.mode == SpecMode.BASELINE:
            return None
        reason = self.available_modes()[cfg.mode]
        if reason:
            raise ConfigError(f"mode {cfg.mode!r} is not available: {reason}")
        return self.drafters[cfg.mode]

    def _stream(
        self, prompt: list[int], cfg: GenerationConfig, cancel: threading.Event, tokens: list[int]
    ) -> Iterator[Event]:
        budget, grammar = self.admit(prompt, cfg)  # before any model work: a refusal leaves the caches alone
        drafter = self._drafter_for(cfg)
        cached = min(common_prefix_len(self.runner.tokens, prompt), len(prompt) - 1)
        stats = StatsRecorder(cfg, len(prompt), cached)
        taps = drafter.begin(cfg) if drafter is not None else NO_TAPS  # what the target's passes feed it
        self.runner.hidden_sink, self.runner.layer_capture = taps.hidden_sink, taps.layer_capture
        yield from self._prefill(prompt, drafter, cancel)  # every model's prompt work counts as prefill
        stats.prefill_done()
        if cancel.is_set():  # stopped before any token: the chunks done stay cached, exactly
            yield Finished((), "", stats.finish(0, StopReason.CANCELLED), True)
            return
        stop_ids = frozenset(self.tokenizer.eos_token_ids)
        ctx = LoopContext(prompt, Sampler(cfg), budget, stop_ids, cancel, grammar, cfg.logprobs)
        steps = (
            baseline_steps(self.runner, ctx)
            if drafter is None
            else speculative_steps(self.runner, drafter, cfg.max_draft_tokens, ctx, self._controller(cfg, drafter))
        )
        detok = self.tokenizer.detokenizer
        detok.reset()
        stop: StopReason | None = None
        for step in steps:
            yield from step_events(step, detok, tokens, stats)
            stop = step.stop
        yield from end_events(detok, self.tokenizer.decode, tokens, stats, stop or StopReason.LENGTH)

    def _prefill(self, prompt: list[int], drafter: Drafter | None, cancel: threading.Event) -> Iterator[Event]:
        """The target reads the prompt, then the drafter does; cancel acts between chunks."""
        stages = [("target", self.runner.prepare_steps(prompt))]
        if drafter is not None:
            stages.append(("draft", drafter.prefill_steps(prompt)))
        for model, steps in stages:
            if cancel.is_set():
                return
            for done, total in steps:
                yield PrefillProgress(done, total, model)
                if cancel.is_set():
                    return


def step_events(step: Step, detok: Detokenizer, tokens: list[int], stats: StatsRecorder) -> Iterator[Event]:
    """A step's TextChunk (its tokens added to `tokens` and the stats) and its RoundResult, if any."""
    for token in step.tokens:
        detok.add_token(token)
    tokens.extend(step.tokens)
    stats.tokens_emitted(len(step.tokens))
    if step.tokens:
        logprobs = tuple(step.logprobs or ())
        yield TextChunk(detok.last_segment, tuple(step.tokens), tuple(step.from_draft), logprobs)
    if step.round is not None:
        stats.round_done(step.round)
        yield step.round


def end_events(
    detok: Detokenizer,
    decode: Callable[[list[int]], str],
    tokens: list[int],
    stats: StatsRecorder,
    stop: StopReason,
    batch_rows: tuple[int, float] | None = None,
) -> Iterator[Event]:
    """The text the detokenizer still held back, then Finished; `batch_rows`: a batch row's most and mean rows
    per round (GenerationStats.batch_rows_max and batch_rows_mean)."""
    detok.finalize()
    tail = whole_characters(detok.last_segment)  # reading it advances the detokenizer: read once
    if tail:
        yield TextChunk(tail, (), ())
    final = stats.finish(len(tokens), stop)
    if batch_rows is not None:
        final = replace(final, batch_rows_max=batch_rows[0], batch_rows_mean=batch_rows[1])
    yield Finished(tuple(tokens), whole_characters(decode(tokens)), final, stop == StopReason.CANCELLED)


def result_of(events: Iterable[Event]) -> GenerationResult:
    """The Finished event of a stream as a GenerationResult; a Failed event raises its kind's error class."""
    for event in events:
        if isinstance(event, Failed):
            raise error_from(event.kind, event.message)
        if isinstance(event, Finished):
            return GenerationResult(list(event.tokens), event.text, event.stats, event.cancelled)
    raise EngineError("the generation ended without a result")


def whole_characters(text: str) -> str:
    """The text without the U+FFFD that decoding leaves for a UTF-8 sequence cut short (a reply ended
    mid-character at max tokens or stop); the streaming detokenizer never emits one before the end."""
    return text.rstrip("\ufffd")
