"""The toolbar: target and draft pickers (compatible drafts only), Load, the DFlash drafter loaded (if any),
load state, memory."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QToolBar,
    QToolButton,
    QWidget,
)

from .elided_label import ElidedLabel

NO_DRAFT = "No draft"
DFLASH_NAME_PX = 150  # the most the DFlash drafter's folder name takes in the toolbar (its tooltip has it whole)
CHOOSE_TARGET = (
    "Choose a target model first: pick one in the Target list, or open Models… to find one "
    "on this machine or download one."
)


class ModelBar(QToolBar):
    """Pick folders and load them; shows what is loaded and MLX's active memory."""

    loadRequested = Signal(str, object)  # target, draft or None
    targetChanged = Signal(str)
    folderBrowsed = Signal(str)
    managerRequested = Signal()  # open the Models window
    targetMissing = Signal(str)  # Load pressed with no target chosen: what to do
    dflashDropped = Signal()  # the DFlash drafter's button pressed: load the pair without it

    def __init__(self, parent=None):
        super().__init__("Models", parent)
        self.setMovable(False)
        self.setObjectName("modelBar")
        box = QWidget()
        row = QHBoxLayout(box)
        row.setContentsMargins(8, 4, 8, 4)
        row.setSpacing(6)
        self.target = _combo("Target model folder")
        self.draft = _combo("Draft model folder (only drafts with the target's vocabulary can be chosen)")
        self.target.currentIndexChanged.connect(self._target_changed)
        self.load_button = QPushButton("Load", objectName="primary")  # type: ignore[call-overload]
        self.load_button.setToolTip("Load the target (and the draft) on the engine thread")
        self.load_button.clicked.connect(self._load)
        self.manager_button = QPushButton("Models…")
        self.manager_button.setToolTip("Find, download and pair models (Ctrl+Shift+M)")
        self.manager_button.clicked.connect(self.managerRequested)
        self.dflash = QToolButton(objectName="dflashChip")  # type: ignore[call-arg]
        self.dflash.setAccessibleName("DFlash drafter")
        self.dflash.clicked.connect(self.dflashDropped)
        self.dflash.hide()
        self.progress = QProgressBar(maximum=0, textVisible=False)
        self.progress.setFixedWidth(80)
        self.progress.hide()
        self.state = ElidedLabel("No model loaded")  # a long pair name shortens, never widens the window
        self.memory = QLabel("")
        self.memory.setMinimumWidth(110)
        self.memory.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.memory.setObjectName("footer")
        row.addWidget(QLabel("Target"))
        row.addWidget(self.target, 3)
        row.addWidget(_browse(lambda: self._browse(self.target)))
        row.addSpacing(10)
        row.addWidget(QLabel("Draft"))
        row.addWidget(self.draft, 2)
        row.addWidget(_browse(lambda: self._browse(self.draft)))
        row.addSpacing(6)
        row.addWidget(self.load_button)
        row.addWidget(self.manager_button)
        row.addWidget(self.dflash)
        row.addSpacing(10)
        row.addWidget(self.progress)
        row.addWidget(self.state, 1)
        row.addWidget(self.memory)
        box.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.addWidget(box)
        self.names: dict[str, str] = {}  # folder -> the name to show (a repo id for an HF cache snapshot)
        self.set_drafts([], {})

    # --- choices ---

    def set_targets(self, folders: list[str], current: str | None) -> None:
        """Offer these target folders; select current (added when missing)."""
        self.target.blockSignals(True)
        self.target.clear()
        for folder in _with(folders, current):
            self.target.addItem(self.label(folder), folder)
            self.target.setItemData(self.target.count() - 1, folder, Qt.ItemDataRole.ToolTipRole)
        if current:
            self.target.setCurrentIndex(self.target.findData(current))
        self.target.blockSignals(False)

    def set_drafts(self, folders: list[str], reasons: dict[str, str], current: str | None = None) -> None:
        """Offer drafts; those with a reason (incompatible) are greyed with it as tooltip."""
        self.draft.clear()
        self.draft.addItem(NO_DRAFT, None)
        model = self.draft.model()
        assert isinstance(model, QStandardItemModel)  # a combo box's own model
        for folder in _with(folders, current):
            self.draft.addItem(self.label(folder), folder)
            reason = reasons.get(folder)
            item = model.item(self.draft.count() - 1)
            item.setToolTip(f"Cannot draft for this target: {reason}" if reason else folder)
            item.setEnabled(not reason)
        index = self.draft.findData(current) if current else 0
        usable = index > 0 and model.item(index).isEnabled()
        self.draft.setCurrentIndex(index if usable else 0)

    def label(self, folder: str) -> str:
        """The name a folder is shown by: its repo id or publisher/model when known, else its name."""
        return self.names.get(folder) or Path(folder).name

    def target_path(self) -> str | None:
        """The chosen target folder."""
        return self.target.currentData()

    def draft_path(self) -> str | None:
        """The chosen draft folder, or None."""
        return self.draft.currentData()

    def select_draft(self, folder: str | None) -> None:
        """Choose a draft (None: no draft)."""
        index = self.draft.findData(folder) if folder else 0
        if index >= 0:
            self.draft.setCurrentIndex(index)

    def set_dflash(self, folder: str | None) -> None:
        """Show the DFlash drafter loaded beside the target (its folder name; None hides it)."""
        self.dflash.setVisible(folder is not None)
        if folder is None:
            return
        name = self.dflash.fontMetrics().elidedText(Path(folder).name, Qt.TextElideMode.ElideMiddle, DFLASH_NAME_PX)
        self.dflash.setText(f"DFlash: {name}  ✕")  # a long name shortens: the load state keeps its room
        self.dflash.setToolTip(
            f"DFlash drafter {folder} is loaded for this target (Speculation ▸ DFlash). "
            "Click to drop it: the pair loads again without it."
        )

    # --- state ---

    def set_loading(self, message: str) -> None:
        """Show progress while models load."""
        self.progress.show()
        self.load_button.setEnabled(False)
        self.state.setText(message)
        self.state.setToolTip(message)

    def set_loaded(self, text: str) -> None:
        """Show what is loaded."""
        self.progress.hide()
        self.load_button.setEnabled(True)
        self.state.setText(text)
        self.state.setToolTip(text)

    def set_memory(self, active_bytes: int) -> None:
        """MLX's active memory."""
        gb = active_bytes / 2**30
        self.memory.setText(f"Memory {gb:.2f} GB" if gb >= 1 else f"Memory {active_bytes / 2**20:.0f} MB")
        self.memory.setToolTip("MLX active memory (weights and caches)")

    def _load(self) -> None:
        if self.target_path():
            self.loadRequested.emit(self.target_path(), self.draft_path())
        else:
            self.state.setText("Choose a target model first…")
            self.state.setToolTip(CHOOSE_TARGET)
            self.targetMissing.emit(CHOOSE_TARGET)

    def _target_changed(self, _index: int) -> None:
        if self.target_path():
            self.targetChanged.emit(self.target_path())

    def _browse(self, combo: QComboBox) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Choose a model folder")
        if not folder:
            return
        if combo.findData(folder) < 0:
            combo.addItem(Path(folder).name, folder)
        combo.setCurrentIndex(combo.findData(folder))
        self.folderBrowsed.emit(folder)


def _combo(tip: str) -> QComboBox:
    combo = QComboBox()
    combo.setToolTip(tip)
    combo.setMinimumContentsLength(10)
    combo.setMaximumWidth(280)
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    return combo


def _browse(handler) -> QToolButton:
    button = QToolButton(text="…")  # type: ignore[call-arg]
    button.setToolTip("Choose a folder")
    button.clicked.connect(handler)
    return button


def _with(folders: list[str], current: str | None) -> list[str]:
    return list(folders) + ([current] if current and current not in folders else [])
