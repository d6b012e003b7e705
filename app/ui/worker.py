"""The engine's thread: one long-lived QThread owns the Engine and does all MLX work.

Commands arrive as queued signals; engine events leave as signals carrying the frozen
event objects. Cancel is a threading.Event the UI thread sets directly.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import mlx.core as mx
from PySide6.QtCore import QObject, Signal, Slot

from app.engine import Engine, EngineError, GenerationConfig, IncompatibleDraftError
from app.engine.compat import check_pair
from app.engine.loading import load_model
from app.engine.session import ChatSession
from app.tuning.baseline import measure_baseline_tps


@dataclass(frozen=True)
class GenerateRequest:
    """One reply to generate: the conversation so far (ending with the user's turn) and the settings."""

    request_id: int
    messages: tuple[dict, ...]
    cfg: GenerationConfig
    system_prompt: str = ""
    enable_thinking: bool = False
    cancel: threading.Event = field(default_factory=threading.Event, compare=False)


@dataclass(frozen=True)
class LoadedPair:
    """What the loaded engine offers, for the views."""

    target: str
    draft: str | None
    available_modes: dict[str, str | None]
    decode: Callable[[list[int]], str]
    draft_error: str | None = None
    memory_bytes: int = 0


@dataclass(frozen=True)
class DraftCandidate:
    """A folder that might draft for the selected target, and whether it can."""

    path: str
    compatible: bool
    reason: str = ""


class EngineWorker(QObject):
    """Lives on the engine thread; never touched directly from the UI thread."""

    loadStarted = Signal(str)
    loadProgress = Signal(str)
    loaded = Signal(object)            # LoadedPair
    loadFailed = Signal(str)
    event = Signal(int, object)        # request id, engine event (TextChunk, RoundResult, Finished, Failed, ...)
    generationError = Signal(int, str)  # request id, message of an exception outside the engine's own events
    memoryChanged = Signal(int)        # active MLX memory in bytes
    draftsChecked = Signal(str, object)  # target path, list[DraftCandidate]
    baselineMeasured = Signal(str, float)  # model key, plain-decode tokens per second
    baselineFailed = Signal(str, str)      # model key, message

    def __init__(self):
        super().__init__()
        self.engine: Engine | None = None
        self.target_path: str | None = None
        self._tokenizers: dict[Path, object] = {}

    @Slot(str, object)
    def load_pair(self, target: str, draft: str | None) -> None:
        """Load a target and an optional draft; a draft that cannot serve is refused, the target kept."""
        self.loadStarted.emit(target)
        try:
            self.engine = self.target_path = None
            self.loadProgress.emit(f"Loading {Path(target).name}…")
            target_model = load_model(target)
            draft_model = draft_error = None
            if draft:
                self.loadProgress.emit(f"Loading draft {Path(draft).name}…")
                draft_model = load_model(draft)
            try:
                self.engine = Engine(target_model, draft_model)
            except IncompatibleDraftError as exc:
                draft_error, draft = str(exc), None
                self.engine = Engine(target_model)
            mx.clear_cache()
            self.target_path = str(target_model.path)
            self.loaded.emit(LoadedPair(self.target_path, draft, self.engine.available_modes(),
                                        self.engine.tokenizer.decode, draft_error, mx.get_active_memory()))
        except Exception as exc:  # the window must stay usable whatever goes wrong
            self.loadFailed.emit(_message(exc))
        self.memoryChanged.emit(mx.get_active_memory())

    @Slot(object)
    def generate(self, request: GenerateRequest) -> None:
        """Stream one reply; every event goes out tagged with the request id."""
        try:
            if self.engine is None:
                raise EngineError("no model is loaded: choose a target model folder and press Load")
            session = ChatSession(self.engine, request.system_prompt or None, request.enable_thinking)
            ids = session.prompt_ids(list(request.messages))
            for event in self.engine.stream(ids, request.cfg, request.cancel):
                self.event.emit(request.request_id, event)
        except Exception as exc:  # a bug here must become a banner, not a dead thread
            self.generationError.emit(request.request_id, _message(exc))
        self.memoryChanged.emit(mx.get_active_memory())

    @Slot(str)
    def measure_baseline(self, model_key: str) -> None:
        """Measure the loaded target's plain-decode speed (the dashboard's break-even line)."""
        try:
            if self.engine is None or model_key != self.target_path:
                raise EngineError(f"cannot measure {Path(model_key).name}: it is not the loaded target")
            tps = measure_baseline_tps(self.engine)
            if not tps > 0:
                raise EngineError(f"the plain-decode measurement of {Path(model_key).name} gave no speed")
            self.baselineMeasured.emit(model_key, float(tps))
        except Exception as exc:  # a failed measurement leaves the line off, nothing else
            self.baselineFailed.emit(model_key, _message(exc))
        self.memoryChanged.emit(mx.get_active_memory())

    @Slot()
    def reclaim_engine(self) -> None:
        """Take the engine back after another thread (a sweep, an A/B run) used it.

        MLX streams belong to threads: arrays another thread left lazy in the caches cannot be
        evaluated here, so the caches start afresh.
        """
        if self.engine is not None:
            self.engine.reset()

    @Slot(str, object)
    def check_drafts(self, target: str, candidates: list[str]) -> None:
        """Check each candidate against the target (vocabulary, special tokens, template, architecture)."""
        results = []
        for path in candidates:
            try:
                ok, reason = self._pair(target, path)
            except Exception as exc:  # an unreadable folder is greyed, not fatal
                ok, reason = False, f"cannot read it: {_message(exc)}"
            results.append(DraftCandidate(path, ok, reason))
        self.draftsChecked.emit(target, results)

    def _pair(self, target: str, draft: str) -> tuple[bool, str]:
        try:
            from app.hub.pairing import pair_report
        except ImportError:  # the model manager is optional: fall back to the engine's tokenizer check
            report = check_pair(self._tokenizer(target), self._tokenizer(draft))
        else:
            report = pair_report(Path(target), Path(draft), self._tokenizers)
        return report.compatible, report.reason

    def _tokenizer(self, path: str):
        from app.upstream.mlx_lm import load_tokenizer

        key = Path(path).resolve()
        if key not in self._tokenizers:
            self._tokenizers[key] = load_tokenizer(key)
        return self._tokenizers[key]


def _message(exc: Exception) -> str:
    logging.getLogger(__name__).error("%s: %s", type(exc).__name__, exc, exc_info=exc)  # traceback to the log
    return str(exc) if isinstance(exc, EngineError) else f"{type(exc).__name__}: {exc}"
