"""Bases for the mixins a window's code is split into: to the type checker the Qt class the window is, at run time
`object` (the window that mixes them in brings its Qt class once, so the method order stays the window's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMainWindow, QWidget

    WidgetPart = QWidget
    MainWindowPart = QMainWindow
else:
    WidgetPart = MainWindowPart = object
