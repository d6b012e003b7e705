"""The sweep view's widgets and its settings form (K, reps, warm-up, tokens, prompt types): the values saved
and put back across restarts, and read as a SweepConfig. A mixin of SweepView."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QSignalBlocker
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from specchat.engine.config import LIMITS
from specchat.engine.errors import ConfigError
from specchat.tuning.sweep import SweepConfig, parse_ks
from specchat.tuning.sweep_prompts import BUILTIN_PROMPTS, builtin_prompts

from .. import theme
from ..banner import Banner
from ..flow_layout import FlowLayout
from ..theme_switch import follow
from .ab_panel import ABPanel
from .sweep_table import SpeedupChart, SweepTable

if TYPE_CHECKING:
    from pathlib import Path

    from .suite_view import SuiteView

DEFAULT_KS = "1,2,4,8"


def _labelled(text: str, field: QWidget) -> QWidget:
    """A label and its field as one piece that a flow layout keeps together."""
    piece = QWidget()
    row = QHBoxLayout(piece)
    row.setContentsMargins(0, 0, 0, 0)
    row.addWidget(QLabel(text))
    row.addWidget(field)
    return piece


def card_css() -> str:
    """A card's style in the current palette."""
    return f"background: {theme.SURFACE}; border: 1px solid {theme.BORDER}; border-radius: 10px;"


class SweepControls:
    """The sweep view's controls and what they say; SweepView supplies the suite tab and the actions."""

    # what SweepView supplies (declared for the type checker; nothing is set here)
    suite: SuiteView
    _wanted_mode: str
    start: Callable[[], bool]
    cancel_sweep: Callable[[], None]
    use_best_k: Callable[[], Path | None]
    _ask_export: Callable[[str], None]

    def controls(self) -> dict:
        """The controls' values as plain JSON: what set_controls takes back."""
        return {
            "mode": self.mode.currentData() or self._wanted_mode,
            "ks": self.ks_edit.text(),
            "reps": self.reps.value(),
            "warmup": self.warmup.value(),
            "max_tokens": self.max_tokens.value(),
            "prompts": [name for name, box in self.prompt_boxes.items() if box.isChecked()],
            "dynamic": self.dynamic.isChecked(),
            "allow_battery": self.allow_battery.isChecked(),
            "suite": self.suite.controls(),
        }

    def set_controls(self, values: dict) -> None:
        """Put saved values back into the controls; a value of the wrong type or range is left at its default."""
        blockers = [QSignalBlocker(w) for w in (self.ks_edit, self.reps, self.warmup, self.max_tokens)]
        if isinstance(values.get("mode"), str):
            self._wanted_mode = values["mode"]
            self._choose_mode()
        if isinstance(values.get("ks"), str):
            self.ks_edit.setText(values["ks"])
        for name, box in (("reps", self.reps), ("warmup", self.warmup), ("max_tokens", self.max_tokens)):
            value = values.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and box.minimum() <= value <= box.maximum():
                box.setValue(value)
        prompts = values.get("prompts")
        if isinstance(prompts, list) and any(name in self.prompt_boxes for name in prompts):
            for name, box in self.prompt_boxes.items():
                box.setChecked(name in prompts)
        for name, check in (("dynamic", self.dynamic), ("allow_battery", self.allow_battery)):
            if isinstance(values.get(name), bool):
                check.setChecked(values[name])
        if isinstance(values.get("suite"), dict):
            self.suite.set_controls(values["suite"])
        del blockers

    def _choose_mode(self) -> None:
        index = self.mode.findData(self._wanted_mode)
        if index >= 0:
            self.mode.setCurrentIndex(index)

    def _make_controls(self) -> None:
        self.banner = Banner()
        self.mode = QComboBox()
        self.ks_edit = QLineEdit(DEFAULT_KS)
        self.ks_edit.setToolTip("Draft lengths to try, separated by commas (1 to 16)")
        self.ks_edit.setMinimumWidth(self.ks_edit.fontMetrics().horizontalAdvance("1,2,4,8,16 ") + 16)
        self.reps = QSpinBox(minimum=1, maximum=50, value=3, prefix="reps ")
        self.warmup = QSpinBox(minimum=0, maximum=10, value=1, prefix="warmup ")
        self.max_tokens = QSpinBox(
            minimum=int(LIMITS["max_tokens"].low), maximum=int(LIMITS["max_tokens"].high), value=128, suffix=" tokens"
        )
        self.prompt_boxes = {name: QCheckBox(name, checked=True) for name in BUILTIN_PROMPTS}  # type: ignore[call-overload]
        self.dynamic = QCheckBox("dynamic", checked=True)  # type: ignore[call-overload]
        self.dynamic.setToolTip(
            "After the fixed Ks, a cell of auto K: each round drafts until the drafter is unsure "
            "(at most the engine's default max). Recommended only when it beats plain decoding and "
            "the fastest fixed K beyond the noise."
        )
        self.allow_battery = QCheckBox("run on battery")
        self.run_button = QPushButton("Run sweep", objectName="primary", clicked=self.start)  # type: ignore[call-overload]
        self.cancel_button = QPushButton("Cancel", clicked=self.cancel_sweep, enabled=False)  # type: ignore[call-overload]
        self.progress = QProgressBar(textVisible=True)
        self.progress_label = QLabel("", wordWrap=True)
        self.progress_label.setStyleSheet(f"color: {theme.MUTED}")
        self.table = SweepTable()
        self.chart = SpeedupChart()
        self.best_label = QLabel("", wordWrap=True)
        self.use_best = QPushButton("Use best K", clicked=self.use_best_k, enabled=False)  # type: ignore[call-overload]
        self.use_best.setToolTip(
            "Save the best choice per prompt type for this pair as the chat's default: a K "
            "only when it beats plain decoding beyond the noise, auto K only when it also beats "
            "the fastest K beyond the noise, else Off (speculation off)"
        )
        self.exports = [
            QPushButton(f"Export {kind}", enabled=False, clicked=lambda _=False, k=kind: self._ask_export(k))  # type: ignore[call-overload]
            for kind in ("CSV", "JSON", "PNG")
        ]
        self.ab = ABPanel()

    def _controls(self) -> QFrame:
        card = QFrame(objectName="sweepControls")  # type: ignore[call-arg]
        follow(card, lambda: card.setStyleSheet(f"QFrame#sweepControls {{ {card_css()} }}"))
        row = FlowLayout()
        row.add(_labelled("Sweep", self.mode))
        row.add(_labelled("K", self.ks_edit))
        boxes = (*self.prompt_boxes.values(), self.dynamic, self.allow_battery)
        for widget in (self.reps, self.warmup, self.max_tokens, *boxes):
            row.add(widget)
        buttons = QWidget()
        pair = QHBoxLayout(buttons)
        pair.setContentsMargins(0, 0, 0, 0)
        pair.addWidget(self.cancel_button)
        pair.addWidget(self.run_button)
        row.add(buttons)
        column = QVBoxLayout(card)
        column.setContentsMargins(12, 8, 12, 8)
        column.addLayout(row)
        column.addWidget(self.progress)
        column.addWidget(self.progress_label)
        return card

    def config(self) -> SweepConfig:
        """The sweep settings from the controls; ConfigError names what is wrong."""
        names = [name for name, box in self.prompt_boxes.items() if box.isChecked()]
        if not names:
            raise ConfigError("choose at least one prompt type to sweep")
        return SweepConfig(
            mode=self.mode.currentData() or "draft",
            ks=parse_ks(self.ks_edit.text()),
            reps=self.reps.value(),
            warmup=self.warmup.value(),
            max_tokens=self.max_tokens.value(),
            prompts=tuple(builtin_prompts(names)),
            allow_battery=self.allow_battery.isChecked(),
            dynamic=self.dynamic.isChecked(),
        )
