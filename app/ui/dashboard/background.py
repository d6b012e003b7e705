"""Run one slow job (a sweep, an A/B comparison) off the UI thread, with progress and a result."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QThread, Signal

from app.engine.errors import EngineError


class BackgroundJob(QThread):
    """work(emit_progress) runs on this thread; progress, succeeded or failed arrive on the UI thread."""

    progress = Signal(object)
    succeeded = Signal(object)
    failed = Signal(str)

    def __init__(self, work: Callable[[Callable[[object], None]], object], parent=None):
        super().__init__(parent)
        self.work = work

    def run(self) -> None:
        """The thread's body: run the work, then report its result or its error."""
        try:
            result = self.work(self.progress.emit)
        except Exception as exc:  # the view shows it; the thread must end cleanly either way
            self.failed.emit(str(exc) if isinstance(exc, EngineError) else f"{type(exc).__name__}: {exc}")
            return
        self.succeeded.emit(result)
