"""Which folders can draft for a target: read on the worker pool (no model runs), answered as a signal."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from specchat.engine.errors import user_message
from specchat.hub.pairing import pair_report

from .tasks import TaskRunner

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DraftCandidate:
    """A folder that might draft for the selected target, and whether it can."""

    path: str
    compatible: bool
    reason: str = ""


class DraftChecker(QObject):
    """Checks candidate drafts against a target off the engine queue, so a long sweep does not hold the list back."""

    checked = Signal(str, object)  # target path, list[DraftCandidate]

    def __init__(self, runner: TaskRunner, parent: QObject | None = None):
        super().__init__(parent)
        self.runner = runner
        self._tokenizers: dict[Path, object] = {}  # read once per folder, by one check at a time
        self._one_at_a_time = threading.Lock()

    def check(self, target: str, candidates: list[str]) -> None:
        """Check each candidate against the target on the worker pool (`checked` follows)."""
        folders = list(candidates)
        self.runner.run(
            lambda: self._check(target, folders),
            lambda results: self.checked.emit(target, results),
            lambda message: log.error("checking drafts for %s failed: %s", target, message),
        )

    def _check(self, target: str, candidates: list[str]) -> list[DraftCandidate]:
        with self._one_at_a_time:
            return [self._candidate(target, path) for path in candidates]

    def _candidate(self, target: str, path: str) -> DraftCandidate:
        try:
            report = pair_report(Path(target), Path(path), self._tokenizers)
        except Exception as exc:  # an unreadable folder is greyed, not fatal
            log.error("checking %s as a draft failed", path, exc_info=exc)  # the traceback goes to the log
            return DraftCandidate(path, False, f"cannot read it: {user_message(exc)}")
        return DraftCandidate(path, report.compatible, report.reason)
