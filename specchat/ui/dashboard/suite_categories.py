"""The Suite tab's categories: the prompts there are (built in, and fetched by a `specchat suite` run), and the
picker, a button ("Categories: all (5)", "Categories: 3 of 5") whose menu checks the categories a run covers, with
All and None; the menu stays open while categories are ticked."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QPushButton

from specchat.tuning.suite_data import (
    BUILTIN_WHAT,
    SuiteDataError,
    SuiteItem,
    builtin_categories,
    cached_suite,
    sources,
)


def _fetched(cache_dir: Path) -> list[SuiteItem]:
    """MT-Bench's and HumanEval's prompts when a `specchat suite` run has cached them (the app never downloads
    them itself), else none."""
    try:
        return cached_suite(cache_dir)
    except SuiteDataError:
        return []


def suite_items(cache_dir: Path) -> list[SuiteItem]:
    """Every prompt a run can choose from: the fetched ones, then the built-in categories."""
    return _fetched(cache_dir) + builtin_categories()


def category_names(cache_dir: Path) -> list[str]:
    """The categories of suite_items, in its order, without building the built-in prompts."""
    return list(dict.fromkeys([i.category for i in _fetched(cache_dir)] + list(BUILTIN_WHAT)))


def picker_text(chosen: int, total: int) -> str:
    """'Categories: all (5)', 'Categories: 3 of 5' or 'Categories: none'."""
    if chosen == 0:
        return "Categories: none"
    return f"Categories: all ({total})" if chosen == total else f"Categories: {chosen} of {total}"


class StayingMenu(QMenu):
    """A menu that stays open when a checkable action is clicked, so that several can be ticked in a row."""

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        action = self.activeAction()
        if action is not None and action.isEnabled() and action.isCheckable():
            action.trigger()
            return
        super().mouseReleaseEvent(event)


class CategoryPicker(QPushButton):
    """The categories to run, chosen in its menu; `changed` after every change made there or by set_chosen."""

    changed = Signal()

    def __init__(self, names: Iterable[str] = (), parent=None):
        super().__init__(parent)
        self.setObjectName("suiteCategories")
        self.menu_ = StayingMenu(self)
        self.setMenu(self.menu_)
        self.actions_: dict[str, QAction] = {}
        self.set_names(names)

    def set_names(self, names: Iterable[str]) -> None:
        """Offer these categories; those offered before keep their tick, new ones come ticked."""
        names = list(dict.fromkeys(names))
        if names == list(self.actions_):
            return
        before = {name: action.isChecked() for name, action in self.actions_.items()}
        self.menu_.clear()
        self.menu_.addAction("All", lambda: self.set_chosen(None))
        self.menu_.addAction("None", lambda: self.set_chosen([]))
        self.menu_.addSeparator()
        where = sources()
        self.actions_ = {}
        for name in names:
            action = self.menu_.addAction(name)
            action.setCheckable(True)
            action.setChecked(before.get(name, True))
            if name in where:
                action.setToolTip(where[name].origin)
            action.toggled.connect(self._toggled)
            self.actions_[name] = action
        self.menu_.setToolTipsVisible(True)
        self._show_count()

    def names(self) -> list[str]:
        """Every category offered, in order."""
        return list(self.actions_)

    def chosen(self) -> list[str]:
        """The ticked categories, in the suite's order."""
        return [name for name, action in self.actions_.items() if action.isChecked()]

    def all_chosen(self) -> bool:
        """True when every category offered is ticked."""
        return len(self.chosen()) == len(self.actions_)

    def set_chosen(self, names: Iterable[str] | None) -> None:
        """Tick these categories and untick the others (None: all of them); unknown names are ignored."""
        wanted = None if names is None else set(names)
        for name, action in self.actions_.items():
            action.blockSignals(True)
            action.setChecked(wanted is None or name in wanted)
            action.blockSignals(False)
        self._toggled()

    def restore(self, saved: object) -> None:
        """A saved choice back (None: all); one of the wrong type, or naming only categories gone since, is left."""
        if saved is None:
            self.set_chosen(None)
        elif isinstance(saved, list) and all(isinstance(name, str) for name in saved):
            if not saved or set(saved) & set(self.actions_):
                self.set_chosen(saved)

    def _toggled(self, *_args) -> None:
        self._show_count()
        self.changed.emit()

    def _show_count(self) -> None:
        chosen = self.chosen()
        self.setText(picker_text(len(chosen), len(self.actions_)))
        listed = ", ".join(chosen) if chosen else "none"
        self.setToolTip(f"The categories a run covers (specchat suite --categories): {listed}")
