"""The pair builder's view of a check: the verdict, the checks, the memory fit and the catalog's advice, each
coloured label made again when the theme changes. A mixin of PairPanel."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QLabel

from specchat.hub.memory_fit import MemoryFit
from specchat.hub.pairing import INCOMPATIBLE, PairReport

from ..mixin_bases import WidgetPart
from .memory_bar import LEVEL_TONES, LEVEL_WORDS, fit_legend, fit_numbers
from .pair_check import PairResult, checks_html, escape_html
from .planned_fit import PLANNED_NOTE, PlannedFit
from .style import muted, pill

if TYPE_CHECKING:
    from PySide6.QtCore import Signal
    from PySide6.QtWidgets import QPushButton

    from specchat.hub.catalog import Catalog

    from .memory_bar import MemoryBar
    from .rows import ModelRow


class PairView(WidgetPart):
    """Show a check's answer (or why there is none); PairPanel supplies the labels, the state and the signals."""

    # what PairPanel supplies (declared for the type checker; nothing is set here)
    catalog: Catalog
    result: PairResult | None
    planned: tuple[str, ...] | None
    planned_result: PlannedFit | None
    _pending: tuple | None
    _rows: dict[str, ModelRow]
    _shown: dict[QLabel, Callable[[], str]]
    verdict: QLabel
    checks: QLabel
    fit_label: QLabel
    memory_bar: MemoryBar
    legend: QLabel
    recommendation: QLabel
    use_button: QPushButton
    checked: Signal
    plannedChecked: Signal
    plannedFailed: Signal

    def _show_result(self, result: PairResult) -> None:
        if (result.target, result.draft, result.context) != self._pending:
            return  # the choice changed while this one was being checked
        self.result = result
        self._show_report(result.report)
        self._show_fit(result.fit)
        self._show_recommendation(result)
        compatible = result.report is None or result.report.compatible
        self.use_button.setEnabled(compatible)
        self.checked.emit(result)

    def _show_planned(self, answer) -> None:
        pending, planned = answer
        if self._pending != pending:
            return  # the selection changed while the hub answered
        self.result, self.planned_result = None, planned
        names = escape_html(planned.target) + (f" + {escape_html(planned.draft)}" if planned.draft else "")
        names += f" + DFlash drafter {escape_html(planned.dflash)}" if planned.dflash else ""
        self._show(
            self.verdict,
            lambda: (
                pill("Not downloaded", "neutral")
                + f"&nbsp; target {names}<br>"
                + muted("compatibility is checked once downloaded")
            ),
        )
        self._clear(self.checks)
        self.checks.hide()
        self._show_fit(planned.fit, PLANNED_NOTE)
        self.recommendation.clear()
        self.plannedChecked.emit(planned)

    def _planned_failed(self, pending: tuple, message: str) -> None:
        if self._pending != pending:
            return
        self._show_idle("")
        self._pending = pending  # answered: no new request until the choice changes
        offline = message.startswith("offline")
        self._show(
            self.verdict,
            lambda: (
                pill("Offline" if offline else "Cannot plan", "bad")
                + "&nbsp; the memory fit of a model that is not downloaded needs its size and "
                f"config.json from Hugging Face: {escape_html(message)}"
            ),
        )
        self.plannedFailed.emit(message)

    def _show_error(self, message: str) -> None:
        if self.planned is not None:
            return  # a local check answered after the user moved on to models not downloaded
        self.result = None
        self._show(self.verdict, lambda: pill("Cannot check", "bad") + f"&nbsp; {escape_html(message)}")

    def _show_idle(self, message: str) -> None:
        self.result = None
        self._pending = None
        self._show(self.verdict, lambda: muted(escape_html(message)))
        self._clear(self.checks)
        self.checks.hide()
        self._clear(self.fit_label)
        self._clear(self.legend)
        self.recommendation.clear()
        self.memory_bar.set_fit(None)

    def _show_report(self, report: PairReport | None) -> None:
        self._clear(self.checks)
        self.checks.hide()
        if report is None:
            self._show(self.verdict, lambda: pill("Target alone", "neutral") + "&nbsp; pick a draft to check a pair")
            return
        if report.compatible:
            self._show(self.verdict, lambda: pill("✓ Compatible", "good") + "&nbsp; this draft can serve this target")
        else:
            failed = ", ".join(c.name for c in report.checks if c.status == INCOMPATIBLE)
            self._show(
                self.verdict,
                lambda: (
                    pill("✗ Incompatible", "bad")
                    + f"&nbsp; this draft cannot serve this target ({escape_html(failed)})"
                ),
            )
        self._show(self.checks, lambda: checks_html(report))
        self.checks.show()

    def _show_fit(self, fit: MemoryFit, note: str = "") -> None:
        needs, context = fit_numbers(fit)
        self._show(
            self.fit_label,
            lambda: (
                pill(LEVEL_WORDS[fit.level], LEVEL_TONES[fit.level])
                + f"&nbsp; {needs}<br>"
                + muted(context)
                + (f"<br>{muted(escape_html(note), 'i')}" if note else "")
            ),
        )
        self.memory_bar.set_fit(fit)
        self._show(self.legend, lambda: fit_legend(fit))

    def _show_recommendation(self, result: PairResult) -> None:
        target, draft = self._rows.get(result.target), self._rows.get(result.draft or "")
        text = ""
        if target is not None and target.repo_id:
            for pair in self.catalog.pairs_for(target.repo_id):
                if pair.mode == "mtp":
                    text = f"Catalog: this target drafts with its own MTP head (depth {pair.k})."
                elif pair.mode == "dflash" and not text:
                    text = (
                        f"Catalog: DFlash drafter {pair.draft} was trained for this target ({pair.k} tokens a block)."
                    )
                elif (
                    draft is not None
                    and draft.repo_id
                    and pair.draft is not None  # a "draft" pair names one
                    and pair.draft.lower() == draft.repo_id.lower()
                ):
                    text = f"Catalog: a recommended pair; K = {pair.k} draft tokens is known to work."
        self.recommendation.setText(text)

    # --- colours ---

    def _show(self, label: QLabel, make: Callable[[], str]) -> None:
        """Show make()'s rich text, and make it again in the new palette when the theme changes."""
        self._shown[label] = make
        label.setText(make())

    def _clear(self, label: QLabel) -> None:
        self._shown.pop(label, None)
        label.clear()

    def _restyle(self) -> None:
        """The theme changed: every coloured label again, in the current palette."""
        for label, make in self._shown.items():
            label.setText(make())
