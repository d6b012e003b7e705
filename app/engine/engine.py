"""Engine: load a target (and a draft), generate with events, keep caches across calls."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


from .compat import ensure_compatible
from .config import GenerationConfig
from .drafters import DraftModelDrafter, Drafter
from .errors import ConfigError, EngineError
from .events import Event, Failed, Finished, GenerationStats, PrefillProgress, TextChunk
from .hooks import hook_problems
from .loading import LoadedModel, load_model, vocab_size
from .autok import AutoK
from .lookup import PromptLookupDrafter
from .mtp import MtpDrafter, attach_head
from .mtp_detect import MtpSupport, detect_mtp
from .runner import ModelRunner, common_prefix_len
from .sampling import Sampler
from .speculative import LoopContext, Step, baseline_steps, speculative_steps
from .stats import StatsRecorder


@dataclass(frozen=True)
class GenerationResult:
    """What generate() returns: tokens without the stop token, their text, and the stats."""

    tokens: list[int]
    text: str
    stats: GenerationStats
    cancelled: bool = False


class Engine:
    """A target model, an optional draft model, and their caches kept between calls."""

    def __init__(self, target: LoadedModel, draft: LoadedModel | None = None):
        self.target = target
        self.draft = draft
        self.runner = ModelRunner(target.model, target.name)
        self.drafters: dict[str, Drafter] = {"lookup": PromptLookupDrafter(vocab_size(target))}
        self.auto_k: dict[str, AutoK] = {}  # per mode; its cost and acceptance estimates carry over
        self.mtp = self._attach_mtp(target)
        if draft is not None:
            ensure_compatible(target.tokenizer, draft.tokenizer, target.name, draft.name)
            self.drafters["draft"] = DraftModelDrafter(ModelRunner(draft.model, draft.name))
        self.hook_problems = hook_problems(self.runner, self.drafters)  # upstream internals that do not fit

    @classmethod
    def load(cls, target: str | Path, draft: str | Path | None = None) -> "Engine":
        """Load a target and an optional draft from local mlx-lm model folders."""
        return cls(load_model(target), load_model(draft) if draft else None)

    @property
    def tokenizer(self):
        """The target's tokenizer (encode / decode / apply_chat_template)."""
        return self.target.tokenizer

    def available_modes(self) -> dict[str, str | None]:
        """Each mode and why it is unavailable (None when it can be used)."""
        modes = {
            "baseline": None,
            "draft": None if "draft" in self.drafters else "no draft model loaded",
            "mtp": None if "mtp" in self.drafters else f"no MTP head: {self.mtp.reason}",
            "lookup": None,
        }
        return {mode: reason or self.hook_problems.get(mode) for mode, reason in modes.items()}

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

    def generate(self, prompt_ids: list[int], cfg: GenerationConfig,
                 cancel: threading.Event | None = None) -> GenerationResult:
        """Run stream() to the end and return the result; raises on failure."""
        for event in self.stream(prompt_ids, cfg, cancel):
            if isinstance(event, Failed):
                raise EngineError(event.message)
            if isinstance(event, Finished):
                return GenerationResult(list(event.tokens), event.text, event.stats, event.cancelled)
        raise EngineError("generation ended without a result")

    def stream(self, prompt_ids: list[int], cfg: GenerationConfig,
               cancel: threading.Event | None = None) -> Iterator[Event]:
        """Yield TextChunk / RoundResult / PrefillProgress events, then Finished or Failed."""
        tokens: list[int] = []
        self._claim_thread()
        try:
            yield from self._stream(list(prompt_ids), cfg, cancel or threading.Event(), tokens)
        except Exception as exc:  # the caller gets an event, never a dead thread
            self.reset()
            message = str(exc) if isinstance(exc, EngineError) else f"{type(exc).__name__}: {exc}"
            yield Failed(message, type(exc).__name__, tuple(tokens))

    def _claim_thread(self) -> None:
        """MLX keeps unevaluated arrays on the stream of the thread that made them: another thread
        cannot evaluate them ("There is no Stream(cpu, N) in current thread"). Caches built on one
        thread are therefore dropped when a generation starts on another."""
        current = threading.get_ident()
        if getattr(self, "_owner_thread", current) != current:
            self.reset()
        self._owner_thread = current

    def reset(self) -> None:
        """Drop every cache; the next call prefills from scratch."""
        self.runner.reset()
        for drafter in self.drafters.values():
            drafter.reset()

    def _controller(self, cfg: GenerationConfig) -> AutoK | None:
        if not cfg.auto_k:
            return None
        controller = self.auto_k.setdefault(cfg.mode, AutoK(k_max=cfg.max_draft_tokens))
        controller.k_max = cfg.max_draft_tokens
        return controller

    def _drafter_for(self, cfg: GenerationConfig) -> Drafter | None:
        if cfg.mode == "baseline":
            return None
        reason = self.available_modes()[cfg.mode]
        if reason:
            raise ConfigError(f"mode {cfg.mode!r} is not available: {reason}")
        return self.drafters[cfg.mode]

    def _stream(self, prompt, cfg, cancel, tokens) -> Iterator[Event]:
        if not prompt:
            raise ConfigError("the prompt is empty: at least one token is needed")
        drafter = self._drafter_for(cfg)
        cached = min(common_prefix_len(self.runner.tokens, prompt), len(prompt) - 1)
        stats = StatsRecorder(cfg, len(prompt), cached)
        progress = []
        self.runner.hidden_sink = getattr(drafter, "receive_hidden", None)  # MTP needs them
        if isinstance(drafter, MtpDrafter):
            drafter.history = cfg.mtp_history
        self.runner.prepare(prompt, lambda done, total: progress.append(PrefillProgress(done, total)))
        if drafter is not None:
            drafter.prefill(prompt)
        yield from progress
        stats.prefill_done()
        ctx = LoopContext(prompt, Sampler(cfg), cfg.max_tokens, frozenset(self.tokenizer.eos_token_ids), cancel)
        steps = (baseline_steps(self.runner, ctx) if drafter is None
                 else speculative_steps(self.runner, drafter, cfg.max_draft_tokens, ctx, self._controller(cfg)))
        detok = self.tokenizer.detokenizer
        detok.reset()
        stop = None
        for step in steps:
            yield from self._chunks(step, detok, tokens, stats)
            stop = step.stop
        detok.finalize()
        tail = detok.last_segment  # reading it advances the detokenizer: read once
        if tail:
            yield TextChunk(tail, (), ())
        final = stats.finish(len(tokens), stop or "length")
        yield Finished(tuple(tokens), self.tokenizer.decode(tokens), final, stop == "cancelled")

    @staticmethod
    def _chunks(step: Step, detok, tokens: list[int], stats: StatsRecorder) -> Iterator[Event]:
        for token in step.tokens:
            detok.add_token(token)
        tokens.extend(step.tokens)
        stats.tokens_emitted(len(step.tokens))
        if step.tokens:
            yield TextChunk(detok.last_segment, tuple(step.tokens), tuple(step.from_draft))
        if step.round is not None:
            stats.round_done(step.round)
            yield step.round
