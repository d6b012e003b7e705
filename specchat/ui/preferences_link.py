"""The Preferences action (the macOS application menu's Preferences…, Cmd+, / Ctrl+,) and what applying
the dialog changes in the window: send key, default sampling, theme, power policy, dashboard charts."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QKeySequence

from specchat.system.power import PowerStatus, unknown_power

from .power_policy import PowerPolicy
from .preferences import PreferencesDialog
from .theme_switch import switch

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
    """Owns the Preferences action and dialog; apply() puts chosen values into the settings and the window."""

    applied = Signal()

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.dialog: PreferencesDialog | None = None
        # the dashboard's poller reads the power source off the UI thread (pmset is a subprocess)
        self.power = PowerPolicy(window.settings.power_policy, self._last_power)
        self.action = QAction("Preferences…", window)
        self.action.setMenuRole(QAction.MenuRole.PreferencesRole)
        self.action.setShortcuts(preferences_keys())
        self.action.triggered.connect(self.open)

    def _last_power(self) -> PowerStatus:
        last = self.window.docks.dashboard.last_power
        return last[0] if last else unknown_power("not read yet")

    def open(self) -> PreferencesDialog:
        """Show the dialog (window-modal); OK applies its values."""
        dialog = PreferencesDialog(self.window.settings, self.window.paths.data_dir, self.window)
        dialog.accepted.connect(lambda: self.apply(dialog.values()))
        self.dialog = dialog
        dialog.open()
        return dialog

    def apply(self, values: dict) -> None:
        """Store the values in the settings, apply them and save."""
        for name, value in values.items():
            setattr(self.window.settings, name, value)
        self.apply_settings()
        self.window.save()
        self.applied.emit()

    def apply_settings(self) -> None:
        """Make the window match the settings (also at start-up)."""
        settings, window = self.window.settings, self.window
        window.composer.set_enter_sends(settings.enter_sends)
        window.panel.load(settings)
        self.power.policy = settings.power_policy
        switch().set_choice(settings.theme)
        show_charts(window.docks.dashboard, settings.dashboard_charts)


def show_charts(dashboard, names: list[str]) -> None:
    """Show the dashboard's charts named in names, hide the others."""
    for name, attribute in CHART_ATTRIBUTES.items():
        chart = getattr(dashboard, attribute, None)
        if chart is not None:
            chart.setVisible(name in names)
