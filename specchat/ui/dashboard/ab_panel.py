"""The A/B panel: one prompt under Off / Draft / MTP / prompt lookup side by side, run as a job on the engine thread."""

from __future__ import annotations

from typing import cast

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from specchat.engine.config import LIMITS, MTP_MAX_DEPTH
from specchat.engine.prompt import user_prompt_ids
from specchat.tuning.ab_compare import AB_MODES, MODE_TITLES, ABRow, run_ab

from .. import theme
from ..elided_label import ElidedLabel
from ..flow_layout import FlowLayout
from ..job_client import QtJob
from ..job_events import JobHandlers
from ..plain_words import mode_reason
from ..settings_panel import limited_spin_box
from ..theme_switch import follow
from .reflow import ReflowGrid

CARD_WIDTH = 160  # the cards sit side by side when all of them fit, else one above the other
DEFAULT_PROMPT = "Write a Python function that merges two sorted lists, with a docstring."


def card_style() -> str:
    """The A/B card's style sheet in the current palette."""
    return (
        f"ABCard {{ background: {theme.SURFACE}; border: 1px solid {theme.BORDER}; border-radius: 10px; }}"
        f" QLabel#abTitle {{ font-weight: 600; color: {theme.TEXT}; }}"
        f" QLabel#abSpeed {{ font-size: 20px; font-weight: 600; color: {theme.TEXT}; }}"
        f" QLabel#abDetail {{ color: {theme.MUTED}; }}"
    )


SPEED_TIP = (
    "Decode speed of this mode's run: generated tokens over the time from the end of prompt processing "
    "to the last token (the engine's clock), greedy, same prompt and token limit for every mode."
)
DETAIL_TIP = (
    "Tokens generated; acceptance: share of drafted tokens the target accepted (— when nothing was "
    "drafted); accepted / round: accepted drafts per speculative round."
)
SAME_AS_OFF = "same output as Off"
OUTPUT_TIP_CHARS = 1500  # the output's tooltip shows at most this much of it
IDENTICAL_TIP = (
    "Greedy decoding: speculation must give exactly the tokens of Off. 'From token N' is the first token that differs."
)


class ABCard(QFrame):
    """One mode's figures: tok/s, acceptance, whether its output equals Off's, and its first line."""

    def __init__(self, mode: str, parent=None):
        super().__init__(parent)
        follow(self, lambda: self.setStyleSheet(card_style()))
        self.mode = mode
        self.title = QLabel(MODE_TITLES[mode], objectName="abTitle")  # type: ignore[call-overload]
        self.speed = QLabel("—", objectName="abSpeed")  # type: ignore[call-overload]
        self.detail = QLabel("not run yet", objectName="abDetail")  # type: ignore[call-overload]
        self.detail.setWordWrap(True)
        self.identical = QLabel("")
        self.output = ElidedLabel("", objectName="abDetail")  # the output's first line (whole: its tooltip)
        for label, tip in ((self.speed, SPEED_TIP), (self.detail, DETAIL_TIP), (self.identical, IDENTICAL_TIP)):
            label.setToolTip(tip)
        column = QVBoxLayout(self)
        column.setContentsMargins(12, 10, 12, 10)
        for label in (self.title, self.speed, self.detail, self.identical, self.output):
            column.addWidget(label)
        column.addStretch(1)

    def show_row(self, row: ABRow | None, off: ABRow | None = None) -> None:
        """Show a run's figures and the first line of its output (None clears the card); off, Off's run, to
        say "same output as Off" instead when the outputs are equal."""
        text, tip = output_line(row, off) if row is not None else ("", "")
        self.output.setText(text)
        self.output.setToolTip(tip)
        if row is None:
            self.speed.setText("—")
            self.detail.setText("running…")
            self.identical.setText("")
            return
        if row.unavailable:
            plain, detail = mode_reason(row.mode, row.unavailable)
            self.speed.setText("n/a")
            self.detail.setText(f"Not available: {plain}.")
            self.detail.setToolTip(detail or DETAIL_TIP)
            self.identical.setText("")
            return
        self.detail.setToolTip(DETAIL_TIP)
        self.speed.setText(f"{row.tokens_per_s:.1f} tok/s")
        parts = [f"{row.generated_tokens} tokens"]
        if row.acceptance_rate is not None:
            parts.append(f"acceptance {row.acceptance_rate * 100:.0f}%")
            parts.append(f"{row.mean_accepted_per_round:.2f} accepted / round")
        elif row.mode != "baseline":
            parts.append("acceptance —")
        self.detail.setText(" · ".join(parts))
        self.identical.setText(identical_html(row))


def output_line(row: ABRow, off: ABRow | None) -> tuple[str, str]:
    """A card's output line and its tooltip: "same output as Off" when it equals Off's, else the output's
    first non-blank line (the tooltip holds the start of the whole output); blank when it did not run."""
    if row.unavailable:
        return "", ""
    whole = row.text.strip()
    tip = whole[:OUTPUT_TIP_CHARS] + ("…" if len(whole) > OUTPUT_TIP_CHARS else "")
    if row.mode != "baseline" and off is not None and not off.unavailable and row.text == off.text:
        return SAME_AS_OFF, tip
    first = next((line.strip() for line in whole.splitlines() if line.strip()), "")
    return (f"“{first}”" if first else "(no text)"), tip


def identical_html(row: ABRow) -> str:
    """'Identical output: yes / no (from token N)', coloured; blank when not checked."""
    if row.identical is None:
        return f'<span style="color:{theme.MUTED}">identity not checked (sampling)</span>'
    if row.mode == "baseline":
        return f'<span style="color:{theme.MUTED}">reference output</span>'
    if row.identical:
        return '<span style="color:#1f9d55; font-weight:600">✓ identical output: yes</span>'
    return (
        f'<span style="color:{theme.REJECT}; font-weight:600">✕ identical output: no '
        f"(differs from token {row.first_mismatch})</span>"
    )


class ABPanel(QWidget):
    """Pick a prompt, press Run: Off, Draft, MTP and prompt lookup run in turn as one job on the engine thread."""

    busyChanged = Signal(bool)  # True while this panel's comparison is queued or running
    compared = Signal(object)  # list[ABRow]

    def __init__(self, parent=None, client=None):
        super().__init__(parent)
        self.client = client
        self.pair = None
        self.job: QtJob | None = None
        self.rows: list[ABRow] = []
        self.prompt = QPlainTextEdit(DEFAULT_PROMPT)
        self.prompt.setFixedHeight(54)
        self.k = limited_spin_box(LIMITS["num_draft_tokens"], value=4, prefix="K = ")
        self.k.setToolTip(f"Draft tokens per round; the MTP head drafts at most {MTP_MAX_DEPTH}")
        self.max_tokens = limited_spin_box(LIMITS["max_tokens"], value=128, suffix=" tokens", singleStep=1)
        self.run_button = QPushButton("Run A/B", objectName="primary")  # type: ignore[call-overload]
        self.run_button.clicked.connect(self.start)
        self.run_button.setEnabled(False)
        self.cancel_button = QPushButton("Cancel", clicked=self.cancel, enabled=False)  # type: ignore[call-overload]
        self.status = QLabel("Load a model to compare modes.", wordWrap=True)
        self.status.setStyleSheet(f"color: {theme.MUTED}")
        self.cards = {mode: ABCard(mode) for mode in AB_MODES}
        controls = FlowLayout()
        for widget in (self.k, self.max_tokens, self.cancel_button, self.run_button):
            controls.add(widget)
        self.card_grid = ReflowGrid(list(self.cards.values()), CARD_WIDTH, (len(self.cards), 1))
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        heading = QLabel("Same prompt, every mode (greedy: outputs must be identical)", wordWrap=True)
        column.addWidget(heading)
        column.addWidget(self.prompt)
        column.addLayout(controls)
        column.addWidget(self.status)
        column.addWidget(self.card_grid)

    def set_client(self, client) -> None:
        """The engine client whose queue runs the comparison."""
        if client is self.client:
            return
        self.client = client
        client.queueChanged.connect(self._queue_changed)
        self._refresh_button()

    def set_pair(self, pair) -> None:
        """The loaded pair (a LoadedPair, or None when nothing is loaded)."""
        self.pair = pair
        self._refresh_button()
        if self.job is None:
            self.status.setText("Ready." if pair is not None else "Load a model to compare modes.")

    def _refresh_button(self) -> None:
        self.run_button.setEnabled(self.pair is not None and self.client is not None and self.job is None)

    def start(self) -> None:
        """Queue the comparison on the engine thread; it runs after the jobs before it."""
        text = self.prompt.toPlainText().strip()
        if self.pair is None or self.client is None or self.job is not None:
            return
        if not text:
            self.status.setText("Type a prompt to compare.")
            return
        k, max_tokens = int(self.k.value()), int(self.max_tokens.value())  # whole-number limits: QSpinBoxes

        def work(ctx):
            engine = ctx.engine
            ids = user_prompt_ids(engine.tokenizer, text)
            return run_ab(engine, ids, k, max_tokens, cancel=ctx.cancel, on_row=ctx.emit)

        self.rows = []
        for card in self.cards.values():
            card.show_row(None)
        self.job = self.client.submit("ab", work)
        self.job.event.connect(self._job_handlers())
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.busyChanged.emit(True)
        self._queue_changed(self.client.host.state())

    def cancel(self) -> None:
        """Stop after the current generation (a queued comparison never runs)."""
        if self.job is not None:
            self.job.cancel()

    def wait(self, ms: int = 60_000) -> bool:
        """Wait until the comparison's job ended on the engine thread (tests, shutdown)."""
        return self.job.wait(ms) if self.job is not None else True

    def _queue_changed(self, state) -> None:
        ahead = state.ahead_of(self.job.id) if self.job is not None else None
        if ahead is not None:
            self.status.setText(f"Queued ({ahead} ahead)…")

    def _job_handlers(self) -> JobHandlers:
        return JobHandlers(
            queued=lambda ahead: self.status.setText(f"Queued ({ahead} ahead)…" if ahead else "Starting…"),
            started=lambda: self.status.setText("Running Off, then Draft, MTP and prompt lookup…"),
            progress=lambda row: self._row_done(cast(ABRow, row)),  # what run_ab's on_row emits
            finished=lambda rows: self._done(cast("list[ABRow]", rows)),  # what run_ab returns
            failed=lambda failed: self.status.setText(f"A/B failed: {failed.message}"),
            cancelled=lambda: self.status.setText("Cancelled before it started."),
            ended=self._job_ended,
        )

    def _row_done(self, row: ABRow) -> None:
        self.rows.append(row)
        off = next((r for r in self.rows if r.mode == "baseline"), None)  # Off runs first
        self.cards[row.mode].show_row(row, off)

    def _done(self, rows: list[ABRow]) -> None:
        speeds = {r.mode: r.tokens_per_s for r in rows if r.tokens_per_s}
        base = speeds.get("baseline")
        ratios = [f"{MODE_TITLES[m]} {v / base:.2f}×" for m, v in speeds.items() if base and m != "baseline"]
        self.status.setText("Done" + (": " + ", ".join(ratios) + " vs Off" if ratios else "."))
        self.compared.emit(rows)

    def _job_ended(self) -> None:
        done = {r.mode for r in self.rows}
        for mode, card in self.cards.items():
            if mode not in done:
                card.detail.setText("not run")
        self.job = None
        self.cancel_button.setEnabled(False)
        self._refresh_button()
        self.busyChanged.emit(False)
