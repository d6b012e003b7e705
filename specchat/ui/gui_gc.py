"""Python's cyclic garbage collector, run on the GUI thread only.

A collection runs on whichever thread happens to allocate when the thresholds trip: the engine's thread,
a worker's. A cycle that holds a Qt object (a chart's scene, a widget's slot) is then destroyed on that
thread, which Qt does not survive (a later paint reads a deleted scene). So the automatic collector is off
while the window runs, and a timer on the GUI thread collects, generation by generation, as it would.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

INTERVAL_MS = 1000


class GuiThreadCollector(QObject):
    """Turns automatic collection off and collects on this object's (the GUI) thread instead."""

    def __init__(self, parent: QObject | None = None, interval_ms: int = INTERVAL_MS):
        super().__init__(parent)
        self.thresholds = gc.get_threshold()
        gc.disable()
        self.timer = QTimer(self, interval=interval_ms, timeout=self.collect)  # type: ignore[call-arg]
        self.timer.start()

    def collect(self) -> None:
        """Collect each generation whose count is past its threshold (as the automatic collector does)."""
        counts = gc.get_count()
        for generation in range(3):
            if counts[generation] <= self.thresholds[generation]:
                return
            gc.collect(generation)

    def stop(self) -> None:
        """Collect once more and give collection back to Python."""
        self.timer.stop()
        gc.collect()
        gc.enable()
