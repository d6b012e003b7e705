"""Light or dark: follows the system's colour scheme (Qt 6.5+) unless the user forces one.

One ThemeSwitch per application makes a palette current (specchat.ui.theme), gives QApplication a matching
QPalette (so plain widgets follow) and emits `changed`; widgets that bake colours into a style sheet
register a re-style callback with `follow(widget, callback)`.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QWidget

from . import theme

SCHEMES = ("system", "light", "dark")
SCHEME_LABELS = {"system": "Follow the system", "light": "Light", "dark": "Dark"}


class ThemeSwitch(QObject):
    """Holds the user's choice (system / light / dark) and applies the palette it resolves to."""

    changed = Signal(object)  # the theme.Palette now current

    def __init__(self):
        super().__init__()
        self.choice = "system"
        self.applied: theme.Palette | None = None
        self.system_scheme = lambda: QGuiApplication.styleHints().colorScheme()  # tests put in their own
        hints = QGuiApplication.styleHints()
        hints.colorSchemeChanged.connect(self._system_changed)

    def set_choice(self, choice: str) -> None:
        """Follow the system ("system") or force "light" / "dark"; re-styles at once."""
        if choice not in SCHEMES:
            raise ValueError(f"theme must be one of {', '.join(SCHEMES)}, got {choice!r}")
        self.choice = choice
        self.apply()

    def wanted(self) -> theme.Palette:
        """The palette the choice and the system's scheme call for."""
        if self.choice == "system":
            dark = self.system_scheme() == Qt.ColorScheme.Dark
        else:
            dark = self.choice == "dark"
        return theme.DARK if dark else theme.LIGHT

    def apply(self) -> None:
        """Make the wanted palette current; emits changed when it differs from the one applied."""
        palette = self.wanted()
        if palette is self.applied:
            return
        self.applied = palette
        theme.use(palette)
        app = QApplication.instance()
        if isinstance(app, QGuiApplication):
            app.setPalette(qt_palette(palette))
        self.changed.emit(palette)

    def _system_changed(self, _scheme) -> None:
        if self.choice == "system":
            self.apply()


_switch: ThemeSwitch | None = None


def switch() -> ThemeSwitch:
    """The application's one ThemeSwitch (made on first use)."""
    global _switch
    if _switch is None:
        _switch = ThemeSwitch()
    return _switch


class _Follower(QObject):
    """Calls a re-style callback on each theme change; dies (and disconnects) with its widget."""

    def __init__(self, widget: QWidget, callback: Callable[[], None]):
        super().__init__(widget)
        self.callback = callback
        switch().changed.connect(self.restyle)

    def restyle(self, _palette=None) -> None:
        """Run the callback."""
        self.callback()


def follow(widget: QWidget, callback: Callable[[], None]) -> None:
    """Run callback now and again whenever the theme changes, for as long as widget lives."""
    _Follower(widget, callback)
    callback()


def qt_palette(p: theme.Palette) -> QPalette:
    """A QPalette with the app's colours, so plain widgets (fields, menus, lists) match."""
    role, group = QPalette.ColorRole, QPalette.ColorGroup
    qp = QPalette()
    colours = {
        role.Window: p.window_bg,
        role.WindowText: p.text,
        role.Base: p.surface,
        role.AlternateBase: p.panel_bg,
        role.Text: p.text,
        role.Button: p.panel_bg if p.dark else "#f0f1f3",
        role.ButtonText: p.text,
        role.ToolTipBase: p.surface,
        role.ToolTipText: p.text,
        role.Highlight: p.accent,
        role.HighlightedText: "#ffffff",
        role.PlaceholderText: p.muted,
        role.Link: p.accent,
        role.BrightText: "#ffffff",
        role.Mid: p.border,
        role.Midlight: p.border,
        role.Dark: p.border,
        role.Light: p.surface,
        role.Shadow: "#000000",
    }
    for r, colour in colours.items():
        qp.setColor(r, QColor(colour))
    for r in (role.WindowText, role.Text, role.ButtonText):
        qp.setColor(group.Disabled, r, QColor(p.muted))
    return qp
