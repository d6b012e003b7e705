"""The UI thread's handle on the engine thread: starts it, sends commands, cancels, stops it."""

from __future__ import annotations

import itertools
import threading

from PySide6.QtCore import QObject, QThread, Signal

from app.engine import GenerationConfig

from .worker import EngineWorker, GenerateRequest


class EngineClient(QObject):
    """Owns the QThread and its EngineWorker; commands go down as queued signals."""

    _load = Signal(str, object)
    _generate = Signal(object)
    _check_drafts = Signal(str, object)
    _measure_baseline = Signal(str)
    _reclaim = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.thread = QThread()
        self.thread.setObjectName("engine")
        self.worker = EngineWorker()
        self.worker.moveToThread(self.thread)
        self._load.connect(self.worker.load_pair)
        self._generate.connect(self.worker.generate)
        self._check_drafts.connect(self.worker.check_drafts)
        self._measure_baseline.connect(self.worker.measure_baseline)
        self._reclaim.connect(self.worker.reclaim_engine)
        self.thread.start()
        self._ids = itertools.count(1)
        self.current: GenerateRequest | None = None

    def load_pair(self, target: str, draft: str | None = None) -> None:
        """Load models on the engine thread (loadStarted / loaded / loadFailed follow)."""
        self.cancel()
        self._load.emit(target, draft)

    def check_drafts(self, target: str, candidates: list[str]) -> None:
        """Ask which candidate folders can draft for target (draftsChecked follows)."""
        self._check_drafts.emit(target, list(candidates))

    def measure_baseline(self, model_key: str) -> None:
        """Measure the loaded target's plain-decode speed on the engine thread (baselineMeasured / Failed follow)."""
        self._measure_baseline.emit(model_key)

    def reclaim_engine(self) -> None:
        """The engine is back from another thread (sweep, A/B): the engine thread resets its caches first."""
        self._reclaim.emit()

    def generate(self, messages: list[dict], cfg: GenerationConfig, system_prompt: str = "",
                 enable_thinking: bool = False) -> int:
        """Start a reply; returns its request id (events carry it)."""
        self.cancel()
        request = GenerateRequest(next(self._ids), tuple(dict(m) for m in messages), cfg,
                                  system_prompt, enable_thinking, threading.Event())
        self.current = request
        self._generate.emit(request)
        return request.request_id

    def cancel(self) -> None:
        """Stop the reply in progress; the engine checks the event between rounds."""
        if self.current is not None:
            self.current.cancel.set()

    def finished(self, request_id: int) -> None:
        """Forget a request that ended."""
        if self.current is not None and self.current.request_id == request_id:
            self.current = None

    def shutdown(self, timeout_ms: int = 30000) -> None:
        """Cancel, stop the thread and wait for it."""
        self.cancel()
        if self.thread.isRunning():
            self.thread.quit()
            self.thread.wait(timeout_ms)
