"""The UI thread's handle on the engine: its host (one thread, one job queue), the Qt adapter, the reply."""

from __future__ import annotations

from PySide6.QtCore import QObject

from specchat.engine import GenerationConfig
from specchat.engine.owner import EngineHost

from .worker import EngineWorker, QtJob


class EngineClient(QObject):
    """Owns (or shares) an EngineHost and its EngineWorker; every MLX job goes through it, in order."""

    def __init__(self, parent=None, host: EngineHost | None = None):
        super().__init__(parent)
        self._owns_host = host is None
        self.host = host or EngineHost()
        self.worker = EngineWorker(self.host)
        self.current: QtJob | None = None  # the reply queued or running

    def submit(self, kind: str, work) -> QtJob:
        """Queue any job (a sweep, an A/B run): work(ctx) runs on the engine thread after the jobs before it."""
        return self.worker.submit(kind, work)

    def load_pair(self, target: str, draft: str | None = None) -> QtJob:
        """Load models after the queued jobs (loadStarted / loaded / loadFailed follow); the old pair stays
        loaded until the new one is ready."""
        return self.worker.load_pair(target, draft)

    def check_drafts(self, target: str, candidates: list[str]) -> None:
        """Ask which candidate folders can draft for target (draftsChecked follows)."""
        self.worker.check_drafts(target, list(candidates))

    def measure_baseline(self, model_key: str) -> QtJob:
        """Measure the loaded target's plain-decode speed (baselineMeasured / baselineFailed follow)."""
        return self.worker.measure_baseline(model_key)

    def generate(self, messages: list[dict], cfg: GenerationConfig, system_prompt: str = "",
                 enable_thinking: bool = False) -> int:
        """Queue a reply (cancelling one still going); returns its request id (its events carry it)."""
        self.cancel()
        self.current = self.worker.generate([dict(m) for m in messages], cfg, system_prompt, enable_thinking)
        return self.current.id

    def cancel(self) -> None:
        """Stop the reply: a queued one never runs, a running one stops at its next round."""
        if self.current is not None:
            self.current.cancel()

    def finished(self, request_id: int) -> None:
        """Forget a request that ended."""
        if self.current is not None and self.current.id == request_id:
            self.current = None

    def shutdown(self, timeout_ms: int = 30000) -> None:
        """Cancel every job and release the engine (when this client owns the host)."""
        self.cancel()
        if self._owns_host:
            self.host.shutdown(timeout_ms / 1000)
