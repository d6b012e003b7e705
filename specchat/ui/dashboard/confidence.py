"""Acceptance by the drafter's confidence: the dashboard's rounds counted per tenth of confidence, and its plot."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import pyqtgraph as pg
from PySide6.QtGui import QFont

from specchat.engine.draft_stop import TENTHS, checked_drafts

from .. import theme
from ..theme_switch import follow
from .charts import GREEN, GREEN_LIGHT, GREY, make_plot, pen

BAR_WIDTH = 0.08  # of a tenth's 0.1: a gap between bars
CONFIDENCE_EMPTY = "Confidence appears with Auto K: each draft's top-1 probability"
CONFIDENCE_LEGEND = [(GREEN_LIGHT, "bar", "accepted"), (GREY, "dashed", "calibrated")]  # each bar: its drafts above it
Y_RANGE = (-4, 118)  # percent: room below 0 for its label, above a full bar for its count
X_RANGE = (-0.05, 1.05)  # room beside 0 and 1 for their labels


class ConfidentRound(Protocol):
    """What ConfidenceHistory reads of a round (specchat.engine's RoundResult)."""

    @property
    def drafted(self) -> int: ...
    @property
    def accepted(self) -> int: ...
    @property
    def stopped_early(self) -> bool: ...
    @property
    def stop_confidence(self) -> float | None: ...
    @property
    def confidences(self) -> Sequence[float]: ...


@dataclass(frozen=True)
class Bar:
    """One tenth of confidence: its lower edge, and how many drafts in it the target accepted and checked."""

    edge: float
    accepted: int
    verified: int

    @property
    def percent(self) -> float:
        """Acceptance of the tenth's checked drafts, in percent."""
        return 100 * self.accepted / self.verified


class ConfidenceHistory:
    """Drafts counted per tenth of confidence, and the rounds whose drafting stopped early, over one reply."""

    def __init__(self) -> None:
        self.accepted: list[int] = []
        self.verified: list[int] = []
        self.drafting_rounds = self.early_stops = 0
        self.stop_confidences: list[float] = []
        self.clear()

    def clear(self) -> None:
        """Forget every round (a new generation starts)."""
        self.accepted, self.verified = [0] * TENTHS, [0] * TENTHS
        self.drafting_rounds = self.early_stops = 0
        self.stop_confidences = []

    def add(self, round_result: ConfidentRound) -> None:
        """Count one round's drafts and whether it stopped early."""
        self.drafting_rounds += round_result.drafted > 0
        if round_result.stopped_early:
            self.early_stops += 1
            if round_result.stop_confidence is not None:
                self.stop_confidences.append(round_result.stop_confidence)
        for index, accepted in checked_drafts(round_result.confidences, round_result.accepted):
            self.verified[index] += 1
            self.accepted[index] += accepted

    @property
    def has_confidences(self) -> bool:
        """Whether any checked draft came with its confidence (Auto K)."""
        return any(self.verified)

    def bars(self) -> list[Bar]:
        """The tenths that hold checked drafts, lowest first."""
        return [Bar(i / TENTHS, a, v) for i, (a, v) in enumerate(zip(self.accepted, self.verified)) if v]

    def median_stop_confidence(self) -> float | None:
        """The drafter's median confidence where rounds stopped early (None without any)."""
        return statistics.median(self.stop_confidences) if self.stop_confidences else None


def bar_line(bar: Bar) -> str:
    """'0.4–0.5: 12 of 20 drafts accepted (60%)'."""
    drafts = "draft" if bar.verified == 1 else "drafts"
    return (
        f"{bar.edge:.1f}–{bar.edge + 0.1:.1f}: {bar.accepted} of {bar.verified} {drafts} accepted ({bar.percent:.0f}%)"
    )


class ConfidencePlot:
    """The acceptance of each tenth of confidence as bars labelled with their drafts, and the diagonal a
    calibrated drafter would follow."""

    def __init__(self) -> None:
        self.widget = make_plot("% accepted", "draft confidence (top-1 probability)", counts=False)
        item = self.widget.getPlotItem()
        item.setXRange(*X_RANGE, padding=0)
        item.setYRange(*Y_RANGE, padding=0)
        item.getViewBox().setMouseEnabled(x=False, y=False)
        item.getAxis("left").setTicks([[(v, str(v)) for v in range(0, 101, 25)]])
        item.getAxis("bottom").setTicks([[(v / 10, f"{v / 10:g}") for v in range(0, 11, 2)]])
        self.diagonal = item.plot([0, 1], [0, 100], pen=pen(GREY, 1.6, dashed=True), antialias=True)
        self.diagonal.setZValue(5)  # over the bars, so where each bar ends against it reads at a glance
        self.bar_item = pg.BarGraphItem(x=[], height=[], width=BAR_WIDTH, brush=GREEN_LIGHT, pen=pen(GREEN, 1))
        item.addItem(self.bar_item)
        self.labels: list[pg.TextItem] = []
        self.bars: list[Bar] = []
        follow(self.widget, self._colour_labels)

    def redraw(self, history: ConfidenceHistory) -> None:
        """Replot the bars and their counts; the tooltip lists every tenth."""
        self.bars = history.bars()
        centres = [bar.edge + 0.05 for bar in self.bars]
        self.bar_item.setOpts(x=centres, height=[bar.percent for bar in self.bars], width=BAR_WIDTH)
        self._label(centres)
        self.widget.setToolTip("\n".join(bar_line(bar) for bar in self.bars))

    def _label(self, centres: list[float]) -> None:
        item = self.widget.getPlotItem()
        for label in self.labels:
            item.removeItem(label)
        small = QFont()
        small.setPointSizeF(7.5)
        self.labels = []
        for centre, bar in zip(centres, self.bars):
            label = pg.TextItem(str(bar.verified), color=theme.MUTED, anchor=(0.5, 1))
            label.setFont(small)
            label.setPos(centre, bar.percent + 1)
            item.addItem(label)
            self.labels.append(label)

    def _colour_labels(self) -> None:
        for label in self.labels:
            label.setColor(theme.MUTED)
