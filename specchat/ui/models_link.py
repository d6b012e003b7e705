"""The main window's link to the Models window: open it, turn its "use as target / draft / DFlash drafter" into
one load."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QWidget

from specchat.paths import AppPaths
from specchat.settings import Settings

if TYPE_CHECKING:
    from .models.window import ModelsWindow


Choice = tuple[str | None, str | None, str | None]  # target, draft, DFlash drafter folders


class ModelsLink(QObject):
    """Opens the Models window on demand; `chosen(target, draft, dflash)` says which pair to load."""

    chosen = Signal(str, object, object)  # target folder, draft folder or None, DFlash drafter folder or None
    needsTarget = Signal()  # a draft or DFlash drafter was picked while no target is chosen

    def __init__(self, parent: QWidget, paths: AppPaths, settings: Settings, current: Callable[[], Choice]):
        super().__init__(parent)
        self.parent_widget, self.paths, self.settings = parent, paths, settings
        self.current = current  # the pickers' (target, draft) and the DFlash drafter loaded for that target
        self.window: ModelsWindow | None = None  # the Models window, once opened
        self._picked: dict[str, str] = {}
        self._timer = QTimer(self, singleShot=True, interval=0, timeout=self._apply)  # type: ignore[call-arg]

    def open(self) -> ModelsWindow:
        """Show the Models window (made on first use, again after it was closed) and return it."""
        # the hub stack (huggingface_hub) loads on first use, not at start
        from .models import open_models_window

        window = open_models_window(self.parent_widget, self.paths, self.settings)
        if window is not self.window:
            self.window = window
            window.use_as_target.connect(lambda path: self._pick("target", path))
            window.use_as_draft.connect(lambda path: self._pick("draft", path))
            window.use_as_dflash.connect(lambda path: self._pick("dflash", path))
            window.mtpHeadAdded.connect(self._head_added)
        return window

    def close(self) -> bool:
        """Close the window and stop its downloads; False when the user chose to keep them running."""
        window = self.window
        if window is None or window.closed:
            return True
        if not window.close() and window.isVisible():
            return False
        window.shutdown()
        return True

    def _head_added(self, folder: str) -> None:
        """The loaded target gained an MTP head: load the pair again, so the Speculation menu offers MTP."""
        target, draft, dflash = self.current()
        if target and Path(target).resolve() == Path(folder).resolve():
            self.chosen.emit(target, draft, dflash)

    def _pick(self, role: str, path: str) -> None:
        # "Use pair" emits target then draft (or DFlash drafter) at once: collect both, load once.
        self._picked[role] = path
        self._timer.start()

    def _apply(self) -> None:
        picked, self._picked = self._picked, {}
        current_target, current_draft, current_dflash = self.current()
        target = picked.get("target") or current_target
        if not target:
            self.needsTarget.emit()
            return
        same_target = current_target is not None and Path(target) == Path(current_target)
        # a new target without a draft of its own starts without one: the old draft may not fit it, and a
        # DFlash drafter reads the layers of the one target it was trained for
        draft = picked.get("draft", current_draft if same_target else None)
        self.chosen.emit(target, draft, picked.get("dflash", current_dflash if same_target else None))
