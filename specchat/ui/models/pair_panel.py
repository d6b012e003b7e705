"""The pair builder: pick a target and a draft, see every compatibility check and the memory fit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QFrame, QGridLayout, QHBoxLayout, QLabel, QPushButton, QSpinBox, QVBoxLayout

from specchat.hub.catalog import Catalog
from specchat.hub.config import HubConfig
from specchat.system.memory import MachineMemory

from ..plain_words import SELF_DRAFT
from ..tasks import TaskRunner
from ..theme_switch import follow
from .memory_bar import MemoryBar
from .name_combo import NameCombo
from .pair_check import PairResult, check_pair
from .pair_view import PairView
from .planned_fit import PlannedFit, plan_fit
from .rows import ModelRow
from .style import muted

NO_DRAFT = "No draft (target alone)"
SELF_SUFFIX = " (itself: exactness check only)"
DEFAULT_CONTEXT = 8192


class PairPanel(PairView, QFrame):
    """Target and draft pickers over downloaded models, the report, the fit and "Use this pair"."""

    pairChosen = Signal(str, object)  # target path, draft path or None
    checked = Signal(object)  # PairResult, after the view shows it
    plannedChecked = Signal(object)  # PlannedFit of models not downloaded yet, after the view shows it
    plannedFailed = Signal(str)  # why the planned fit could not be made (e.g. offline)

    def __init__(
        self,
        runner: TaskRunner,
        catalog: Catalog,
        read_memory: Callable[[], MachineMemory],
        parent=None,
        config: HubConfig | None = None,
    ):
        super().__init__(parent)
        self.setObjectName("pairPanel")
        self.runner, self.catalog, self.read_memory = runner, catalog, read_memory
        self.config = config or HubConfig.from_env()
        self.result: PairResult | None = None
        self.planned: tuple[str, ...] | None = None  # repos whose planned fit the panel shows instead
        self.planned_draft: str | None = None  # a local folder drafting for the planned target
        self.planned_result: PlannedFit | None = None
        self._rows: dict[str, ModelRow] = {}
        self._tokenizers: dict = {}
        self._pending: tuple | None = None
        self._debounce = QTimer(self, singleShot=True, interval=150)
        self._debounce.timeout.connect(self.check_now)
        self._shown: dict[QLabel, Callable[[], str]] = {}  # how each coloured label's text is made
        self._build()
        follow(self, self._restyle)

    def _build(self) -> None:
        title = QLabel("Pair builder", objectName="sectionTitle")  # type: ignore[call-overload]
        hint = QLabel("Pick a downloaded target and a draft: every check and the memory it needs.", objectName="hint")  # type: ignore[call-overload]
        hint.setWordWrap(True)
        self.setMinimumWidth(330)
        self.setMaximumWidth(480)
        self.target = NameCombo("The model whose output you get")
        self.draft = NameCombo("A small model that guesses the target's next tokens")
        for combo in (self.target, self.draft):
            combo.setMinimumWidth(180)
        self.target.currentIndexChanged.connect(self._pair_changed)
        self.draft.currentIndexChanged.connect(self._draft_changed)
        self.context = QSpinBox(minimum=512, maximum=1_048_576, singleStep=1024, value=DEFAULT_CONTEXT)
        self.context.setSuffix(" tokens")
        self.context.setGroupSeparatorShown(True)
        self.context.setToolTip("The context length to plan memory for (KV cache grows with it)")
        self.context.valueChanged.connect(self._changed)
        form = QGridLayout()
        form.setHorizontalSpacing(8)
        form.setColumnStretch(1, 1)  # the pickers take the width the labels do not need
        for row, (label, widget) in enumerate(
            (("Target", self.target), ("Draft", self.draft), ("Context", self.context))
        ):
            form.addWidget(QLabel(label, objectName="fieldLabel"), row, 0)  # type: ignore[call-overload]
            form.addWidget(widget, row, 1)
        self.verdict = QLabel(objectName="verdict")  # type: ignore[call-overload]
        self.verdict.setWordWrap(True)
        self.verdict.setTextFormat(Qt.TextFormat.RichText)
        self.checks = QLabel(objectName="pairChecks")  # type: ignore[call-overload]
        self.checks.setWordWrap(True)
        self.checks.setTextFormat(Qt.TextFormat.RichText)
        self.checks.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.fit_label = QLabel(objectName="fitHeadline")  # type: ignore[call-overload]
        self.fit_label.setWordWrap(True)
        self.fit_label.setTextFormat(Qt.TextFormat.RichText)
        self.memory_bar = MemoryBar()
        self.legend = QLabel(objectName="hint")  # type: ignore[call-overload]
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.recommendation = QLabel(objectName="hint")  # type: ignore[call-overload]
        self.recommendation.setWordWrap(True)
        self.use_button = QPushButton("Use this pair", objectName="primary", enabled=False)  # type: ignore[call-overload]
        self.use_button.setToolTip("Load this target and draft in the chat window")
        self.use_button.clicked.connect(self._use)
        column = QVBoxLayout(self)
        column.setContentsMargins(16, 14, 16, 14)
        column.setSpacing(8)
        column.addWidget(title)
        column.addWidget(hint)
        column.addLayout(form)
        column.addWidget(self.verdict)
        column.addWidget(self.checks)
        column.addWidget(QLabel("Memory", objectName="fieldLabel"))  # type: ignore[call-overload]
        column.addWidget(self.fit_label)
        column.addWidget(self.memory_bar)
        column.addWidget(self.legend)
        column.addWidget(self.recommendation)
        column.addStretch(1)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.use_button)
        column.addLayout(buttons)
        self._show_idle("Download a model, or add a folder, to build a pair.")

    # --- models to choose from ---

    def set_models(self, rows: list[ModelRow]) -> None:
        """Offer the complete local models; the current choices are kept when still there."""
        self._rows = {str(r.local.path): r for r in rows if r.usable and r.local is not None and not r.is_dflash}
        old_target, old_draft = self.target_path(), self.draft_path()
        for combo in (self.target, self.draft):
            combo.blockSignals(True)
            combo.clear()
        self.draft.addItem(NO_DRAFT, None)
        for path, row in self._rows.items():
            self.target.addItem(row.name, path)
            self.draft.addItem(row.name, path)
            self.target.setItemData(self.target.count() - 1, path, Qt.ItemDataRole.ToolTipRole)
            self.draft.setItemData(self.draft.count() - 1, path, Qt.ItemDataRole.ToolTipRole)
        _select(self.target, old_target)
        _select(self.draft, old_draft)
        self._mark_self_draft()
        for combo in (self.target, self.draft):
            combo.blockSignals(False)
        if self.planned is None:  # a planned fit on show stays until a local pair is picked
            self._changed()

    def choose(self, target: str | None = None, draft: str | None = None) -> None:
        """Select a target and/or a draft by folder path (the check follows)."""
        self.planned = None
        if target is not None:
            _select(self.target, str(target))
        if draft is not None:
            _select(self.draft, str(draft))
        self._changed()

    def check_planned(self, repo_ids: Sequence[str], draft_folder: str | None = None) -> None:
        """Show the planned memory fit of repos not downloaded yet (a target, optionally a draft, which may
        be a local folder instead)."""
        repo_ids = tuple(repo_ids)
        if (self.planned, self.planned_draft) == (repo_ids, draft_folder) and self._pending is not None:
            return  # already on show or on its way
        self.planned, self.planned_draft = repo_ids, draft_folder
        self.use_button.setEnabled(False)
        self._debounce.start()

    def check_local(self) -> None:
        """Back from a planned fit to the chosen local pair."""
        if self.planned is not None:
            self.planned = None
            self._changed()

    def known_plan(self, repo_ids: Sequence[str], context: int) -> PlannedFit | None:
        """The planned fit on show when it is about these repos at this context."""
        known = self.planned_result
        return known if known is not None and known.covers(repo_ids, context) else None

    def target_path(self) -> str | None:
        """The chosen target folder."""
        return self.target.currentData()

    def draft_path(self) -> str | None:
        """The chosen draft folder, None for no draft."""
        return self.draft.currentData()

    # --- checking ---

    def _pair_changed(self, *_) -> None:
        self.planned = None
        self._mark_self_draft()
        self._changed()

    def _draft_changed(self, *_) -> None:
        """A draft picked while a planned fit is on show joins the planned target; else the local pair changed."""
        if self.planned is None:
            self._pair_changed()
            return
        self.planned_draft = self.draft_path()
        self._changed()

    def _mark_self_draft(self) -> None:
        """The target is offered as its own draft only with a label that says it cannot be faster."""
        target = self.target_path()
        for i in range(1, self.draft.count()):
            path = self.draft.itemData(i)
            name = self._name(path)
            mine = path == target
            self.draft.setItemText(i, name + (SELF_SUFFIX if mine else ""))
            self.draft.setItemData(i, SELF_DRAFT if mine else path, Qt.ItemDataRole.ToolTipRole)

    def _name(self, path: str) -> str:
        row = self._rows.get(path)
        return row.name if row is not None else Path(path).name

    def _changed(self, *_) -> None:
        self.use_button.setEnabled(False)
        if self.planned is not None:
            self._pending = None
            self._debounce.start()
            return
        if self.target_path() is None:
            self._show_idle("Download a model, or add a folder, to build a pair.")
            return
        self._debounce.start()

    def check_now(self) -> None:
        """Run the report and the memory fit for the current choice off the UI thread."""
        if self.planned is not None:
            self._check_planned_now(self.planned)
            return
        target, draft, context = self.target_path(), self.draft_path(), self.context.value()
        if target is None:
            return
        if draft == target:
            self._show_idle(
                SELF_DRAFT[0].upper() + SELF_DRAFT[1:] + ". Choose a smaller model of the same "
                "family to speed replies up."
            )
            return
        self._pending = (target, draft, context)
        self._show(self.verdict, lambda: muted("Checking…"))
        tokenizers, read_memory = self._tokenizers, self.read_memory
        self.runner.run(
            lambda: check_pair(target, draft, context, tokenizers, read_memory), self._show_result, self._show_error
        )

    def _check_planned_now(self, repo_ids: tuple[str, ...]) -> None:
        context, config, read_memory, draft = self.context.value(), self.config, self.read_memory, self.planned_draft
        draft_name = self._name(draft) if draft is not None else None
        pending = self._pending = ("planned", repo_ids, draft, context)
        self.planned_result = None
        self._show(self.verdict, lambda: muted("Asking Hugging Face for sizes and config.json…"))
        self.runner.run(
            lambda: (pending, plan_fit(repo_ids, config, context, read_memory(), draft, draft_name)),
            self._show_planned,
            lambda message: self._planned_failed(pending, message),
        )

    def _use(self) -> None:
        if self.result is not None:
            self.pairChosen.emit(self.result.target, self.result.draft)


def _select(combo: QComboBox, path: str | None) -> None:
    index = combo.findData(path) if path is not None else -1
    if index >= 0:
        combo.setCurrentIndex(index)
