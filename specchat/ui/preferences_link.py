"""The Preferences action (the macOS application menu's Preferences…, Cmd+, / Ctrl+,) and what applying
the dialog changes in the window: send key, default sampling, theme, power policy, dashboard charts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget

from specchat.settings import Settings
from specchat.system.power import PowerStatus, unknown_power

from .power_policy import PowerPolicy
from .preferences import PreferencesDialog
from .theme_switch import switch

if TYPE_CHECKING:
    from .dashboard import Dashboard

# the dashboard's attribute for each chart name in Settings.dashboard_charts
CHART_ATTRIBUTES = {
    "throughput": "throughput",
    "acceptance": "acceptance",
    "memory": "memory_chart",
    "power": "power_chart",
}


def preferences_keys() -> list[QKeySequence]:
    """Cmd+, on macOS (the platform's Preferences key); Ctrl+, where the platform defines none."""
    keys = QKeySequence.keyBindings(QKeySequence.StandardKey.Preferences)
    return keys or [QKeySequence("Ctrl+,")]


class PreferencesLink(QObject):
    """Owns the Preferences action and dialog; apply() puts chosen values into the settings, the chat (through
    apply_to_chat: send key, default sampling), the theme and the dashboard, then saves."""

    applied = Signal()

    def __init__(
        self,
        parent: QWidget,
        settings: Settings,
        data_dir: Path,
        dashboard: Dashboard,
        apply_to_chat: Callable[[Settings], None],
        save: Callable[[], None],
    ):
        super().__init__(parent)
        self.parent_widget, self.settings, self.data_dir, self.dashboard = parent, settings, data_dir, dashboard
        self.apply_to_chat, self.save = apply_to_chat, save
        self.dialog: PreferencesDialog | None = None
        # the dashboard's poller reads the power source off the UI thread (pmset is a subprocess)
        self.power = PowerPolicy(settings.power_policy, self._last_power)
        self.action = QAction("Preferences…", parent)
        self.action.setMenuRole(QAction.MenuRole.PreferencesRole)
        self.action.setShortcuts(preferences_keys())
        self.action.triggered.connect(self.open)

    def _last_power(self) -> PowerStatus:
        last = self.dashboard.last_power
        return last[0] if last else unknown_power("not read yet")

    def open(self) -> PreferencesDialog:
        """Show the dialog (window-modal); OK applies its values."""
        dialog = PreferencesDialog(self.settings, self.data_dir, self.parent_widget)
        dialog.accepted.connect(lambda: self.apply(dialog.values()))
        self.dialog = dialog
        dialog.open()
        return dialog

    def apply(self, values: dict) -> None:
        """Store the values in the settings, apply them and save."""
        for name, value in values.items():
            setattr(self.settings, name, value)
        self.apply_settings()
        self.save()
        self.applied.emit()

    def apply_settings(self) -> None:
        """Make the window match the settings (also at start-up)."""
        settings = self.settings
        self.apply_to_chat(settings)
        self.power.policy = settings.power_policy
        switch().set_choice(settings.theme)
        show_charts(self.dashboard, settings.dashboard_charts)


def show_charts(dashboard, names: list[str]) -> None:
    """Show the dashboard's charts named in names, hide the others."""
    for name, attribute in CHART_ATTRIBUTES.items():
        chart = getattr(dashboard, attribute, None)
        if chart is not None:
            chart.setVisible(name in names)
