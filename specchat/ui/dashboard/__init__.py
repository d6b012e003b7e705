"""The dashboard (live throughput, acceptance, memory, power), the sweep view and the A/B panel."""

from .ab_panel import ABPanel
from .dashboard import Dashboard
from .sweep_view import SweepView

__all__ = ["ABPanel", "Dashboard", "SweepView"]
