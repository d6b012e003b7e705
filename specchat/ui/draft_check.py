"""Which folders can draft for a target: read on a side thread (no model runs), answered as a signal."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal

from specchat.engine.errors import user_message
from specchat.engine.owner import EngineHost
from specchat.hub.pairing import pair_report

log = logging.getLogger(__name__)
_SIDE: list[EngineHost] = []


@dataclass(frozen=True)
class DraftCandidate:
    """A folder that might draft for the selected target, and whether it can."""

    path: str
    compatible: bool
    reason: str = ""


class DraftChecker(QObject):
    """Checks candidate drafts against a target off the engine queue, so a long sweep does not hold the list back."""

    checked = Signal(str, object)  # target path, list[DraftCandidate]
    _relay = Signal(str, object)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._tokenizers: dict[Path, object] = {}  # read once per folder, on the side thread only
        self._relay.connect(self.checked, Qt.ConnectionType.QueuedConnection)

    def check(self, target: str, candidates: list[str]) -> None:
        """Check each candidate against the target on the side thread (`checked` follows)."""
        _side_host().submit(
            "check_drafts", lambda _ctx: self._check(target, list(candidates)), listener=lambda _event: None
        )

    def _check(self, target: str, candidates: list[str]) -> None:
        results = []
        for path in candidates:
            try:
                report = pair_report(Path(target), Path(path), self._tokenizers)
                ok, reason = report.compatible, report.reason
            except Exception as exc:  # an unreadable folder is greyed, not fatal
                log.error("checking %s as a draft failed", path, exc_info=exc)  # the traceback goes to the log
                ok, reason = False, f"cannot read it: {user_message(exc)}"
            results.append(DraftCandidate(path, ok, reason))
        self._relay.emit(target, results)


def _side_host() -> EngineHost:
    """One long-lived thread for work that reads folders but runs no model (it never holds an engine)."""
    if not _SIDE:
        _SIDE.append(EngineHost("side"))
    return _SIDE[0]
