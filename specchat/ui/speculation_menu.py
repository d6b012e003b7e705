"""The Speculation menu: mode (Off / Draft model / MTP / Prompt lookup), draft tokens K or Auto, the tuned K."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Final, Literal

from PySide6.QtCore import Signal
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QMenu

from specchat.engine.config import LIMITS
from specchat.engine.modes import SpecMode
from specchat.paths import AppPaths

from .plain_words import mode_reason

log = logging.getLogger(__name__)
MODE_LABELS: dict[SpecMode, str] = {
    SpecMode.BASELINE: "Off",
    SpecMode.DRAFT: "Draft model",
    SpecMode.MTP: "MTP (model's own head)",
    SpecMode.LOOKUP: "Prompt lookup (no model)",
    SpecMode.DFLASH: "DFlash (block drafter)",
    SpecMode.AUTO: "Auto (picks the drafter each round)",
}
MODE_SHORTCUTS = {
    "baseline": "Ctrl+0",
    "draft": "Ctrl+1",
    "mtp": "Ctrl+2",
    "lookup": "Ctrl+3",
    "dflash": "Ctrl+4",
    "auto": "Ctrl+5",
}
K_CHOICES = (1, 2, 3, 4, 6, 8, int(LIMITS["num_draft_tokens"].high))
AUTO: Final = "auto"
KChoice = int | Literal["auto"]  # a draft length K, or AUTO
TUNED_OFF = 0  # a tuned K of 0: the sweep's best choice was speculation off
AUTO_SHORTCUT = "Ctrl+Shift+A"
AUTO_TIP = (
    "Choose K each round from the measured acceptance and draft/verify costs; "
    "K=0 (plain decoding) when drafts do not pay"
)
NOT_LOADED = "no model is loaded yet"
HISTORY_TIP = (
    "On: the MTP head attends over the whole conversation through its own cache, as it was "
    "trained. Off: each head step sees only itself, as mlx-optiq drafts; one head pass per "
    "draft instead of one per new token, cheaper where compute grows with tokens. "
    "Either way the reply is what the model alone would write; only speed and acceptance change."
)


class SpeculationMenu(QMenu):
    """Exclusive mode and K choices; unavailable modes greyed with the reason as tooltip."""

    modeChosen = Signal(str)
    draftTokensChosen = Signal(object)  # int K, or "auto"
    mtpHistoryChosen = Signal(bool)

    def __init__(self, parent=None):
        super().__init__("&Speculation", parent)
        self.setToolTipsVisible(True)
        self.mode_group = QActionGroup(self, exclusive=True)  # type: ignore[call-arg]
        self.mode_actions: dict[SpecMode, QAction] = {}
        for mode, label in MODE_LABELS.items():
            action = QAction(label, self, checkable=True)
            action.setShortcut(QKeySequence(MODE_SHORTCUTS[mode]))
            action.setData(mode)
            action.triggered.connect(lambda _checked=False, m=mode: self.modeChosen.emit(m))
            self.mode_group.addAction(action)
            self.addAction(action)
            self.mode_actions[mode] = action
        self.addSeparator()
        self.k_menu = self.addMenu("Draft &tokens (K)")
        self.k_menu.setToolTipsVisible(True)
        self.k_group = QActionGroup(self, exclusive=True)  # type: ignore[call-arg]
        self.k_actions: dict[int, QAction] = {}
        self.auto_action = QAction("Auto (chosen each round)", self, checkable=True)
        self.auto_action.setShortcut(QKeySequence(AUTO_SHORTCUT))
        self.auto_action.setToolTip(AUTO_TIP)
        self.auto_action.triggered.connect(lambda _checked=False: self._choose_k(AUTO))
        self.k_group.addAction(self.auto_action)
        self.k_menu.addAction(self.auto_action)
        self.k_menu.addSeparator()
        self.tuned_k: KChoice | None = None
        self.more_action = QAction("More draft tokens", self, shortcut=QKeySequence("Ctrl+]"))
        self.fewer_action = QAction("Fewer draft tokens", self, shortcut=QKeySequence("Ctrl+["))
        self.more_action.triggered.connect(lambda: self._step_k(+1))
        self.fewer_action.triggered.connect(lambda: self._step_k(-1))
        self.addAction(self.more_action)
        self.addAction(self.fewer_action)
        self.addSeparator()
        self.history_action = QAction("MTP head sees the whole conversation", self, checkable=True)
        self.history_action.setToolTip(HISTORY_TIP)
        self.history_action.triggered.connect(lambda: self.mtpHistoryChosen.emit(self.history_action.isChecked()))
        self.addAction(self.history_action)
        self.current_k: KChoice = 4
        self._build_k_actions()
        self.set_available(None)

    def set_available(self, modes: dict[str, str | None] | None) -> None:
        """Enable each mode the engine offers; None means nothing is loaded."""
        for mode, action in self.mode_actions.items():
            reason = unavailable(modes, mode)
            action.setEnabled(reason is None)
            tip = f"{MODE_LABELS[mode]} ({MODE_SHORTCUTS[mode]})"
            plain, detail = mode_reason(mode, reason)
            action.setToolTip(tip if reason is None else f"Unavailable: {plain}" + (f" ({detail})" if detail else ""))
            action.setStatusTip(action.toolTip())
        self._set_history_available(unavailable(modes, "mtp"))

    def _set_history_available(self, reason: str | None) -> None:
        """The history switch applies to MTP only: greyed, with why in plain words, while MTP is unavailable."""
        action = self.history_action
        action.setEnabled(reason is None)
        plain, _detail = mode_reason("mtp", reason)
        action.setToolTip(HISTORY_TIP if reason is None else f"Applies to MTP only, and MTP is unavailable: {plain}")
        action.setStatusTip(action.toolTip())

    def set_mode(self, mode: SpecMode) -> None:
        """Check a mode without emitting."""
        self.mode_actions[mode].setChecked(True)

    def checked_mode(self) -> SpecMode:
        """The checked mode."""
        return next(m for m, a in self.mode_actions.items() if a.isChecked())

    def set_k(self, k: KChoice) -> None:
        """Check a K or "auto" without emitting (adds a K that is not a listed choice)."""
        self.current_k = k
        if k != AUTO and k not in self.k_actions:
            self._build_k_actions()
        self._check_current()

    def _check_current(self) -> None:
        action = self.auto_action if self.current_k == AUTO else self.k_actions[self.current_k]
        action.setChecked(True)

    def set_tuned_k(self, k: KChoice | None) -> None:
        """Show the pair's tuned K (None: never swept; TUNED_OFF: no K beat plain decoding; AUTO: auto K won)."""
        self.tuned_k = k
        self.auto_action.setText("Auto (chosen each round)" + (" (tuned for this pair)" if k == AUTO else ""))
        off = self.mode_actions[SpecMode.BASELINE]
        off.setText(MODE_LABELS[SpecMode.BASELINE] + (" (tuned for this pair)" if k == TUNED_OFF else ""))
        if k == TUNED_OFF:
            off.setToolTip("The sweep found no K faster than plain decoding beyond the noise for this pair")
        self._build_k_actions()

    def _choices(self) -> list[int]:
        extra = {k for k in (self.tuned_k, self.current_k) if k and k != AUTO}
        return sorted(set(K_CHOICES) | extra)

    def _build_k_actions(self) -> None:
        for action in self.k_actions.values():
            self.k_group.removeAction(action)
            self.k_menu.removeAction(action)
            action.deleteLater()
        self.k_actions = {}
        for k in self._choices():
            label = f"{k} (tuned for this pair)" if k == self.tuned_k else str(k)
            action = QAction(label, self, checkable=True)
            action.setData(k)
            if k == self.tuned_k:
                action.setToolTip("The best K the sweep measured for this pair")
            action.triggered.connect(lambda _checked=False, value=k: self._choose_k(value))
            self.k_group.addAction(action)
            self.k_menu.addAction(action)
            self.k_actions[k] = action
        self._check_current()

    def _choose_k(self, k: KChoice) -> None:
        self.current_k = k
        self.draftTokensChosen.emit(k)

    def _step_k(self, step: int) -> None:
        if self.current_k == AUTO:  # Auto has no neighbours: pick a K from the list to leave it
            return
        choices = self._choices()
        index = choices.index(self.current_k) + step
        if 0 <= index < len(choices):
            self.k_actions[choices[index]].trigger()


def unavailable(modes: dict[str, str | None] | None, mode: str) -> str | None:
    """Why a mode cannot run (None: it can); modes None means nothing is loaded."""
    if mode == "baseline":
        return None
    return NOT_LOADED if modes is None else modes.get(mode, "unknown mode")


def tuned_k(paths: AppPaths, target: str | None, drafter: str | None) -> KChoice | None:
    """The pair's tuned K from specchat.tuning.best_k (when that module and a sweep exist); TUNED_OFF means Off."""
    if not target or not drafter:
        return None
    try:
        from specchat.tuning.best_k import best_choices
    except ImportError:
        return None
    try:
        per_prompt = best_choices(paths, target, drafter)
    except (OSError, RuntimeError) as error:  # a folder that cannot be resolved (gone, a symlink loop)
        log.warning("no tuned K for %s with %s: %s", target, drafter, error)
        return None
    if not per_prompt:
        return None
    if "chat" in per_prompt:
        return per_prompt["chat"]
    counts = Counter(per_prompt.values())
    return min(counts, key=lambda k: (-counts[k], (1, 0) if k == AUTO else (0, k)))  # ties: the smallest fixed K
