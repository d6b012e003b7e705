"""Reads memory (cheap, on the UI thread) and power (runs pmset, so on the worker pool) every few seconds."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from specchat.system.memory import MemorySample, metal_working_set_bytes, read_memory_sample
from specchat.system.power import PowerStatus, read_low_power_mode, read_power

from ..tasks import TaskRunner

MEMORY_INTERVAL_MS = 1000
POWER_INTERVAL_MS = 5000


def default_memory_reader() -> Callable[[], MemorySample]:
    """read_memory_sample bound to this process and Metal's working set (both looked up once)."""
    import psutil

    process = psutil.Process()
    working_set = metal_working_set_bytes()
    return lambda: read_memory_sample(process=process, working_set_bytes=working_set)


class SystemPoller(QObject):
    """Emits memorySampled and powerRead on timers; readers are injectable for tests."""

    memorySampled = Signal(object)  # MemorySample
    powerRead = Signal(object, object)  # PowerStatus, low-power mode (bool | None)

    def __init__(
        self,
        parent=None,
        *,
        read_memory: Callable[[], MemorySample] | None = None,
        read_power: Callable[[], PowerStatus] = read_power,
        read_low_power: Callable[[], bool | None] = read_low_power_mode,
        memory_interval_ms: int = MEMORY_INTERVAL_MS,
        power_interval_ms: int = POWER_INTERVAL_MS,
        runner: TaskRunner | None = None,
    ):
        super().__init__(parent)
        self.read_memory = read_memory or default_memory_reader()
        self.read_power = read_power
        self.read_low_power = read_low_power
        self._owns_runner = runner is None
        self.runner = runner or TaskRunner(self)  # its own pool when none is shared: stop() ends it
        self._power_pending = False
        self.memory_timer = QTimer(self, interval=memory_interval_ms, timeout=self.sample_memory)  # type: ignore[call-arg]
        self.power_timer = QTimer(self, interval=power_interval_ms, timeout=self.request_power)  # type: ignore[call-arg]

    def start(self) -> None:
        """Read both now, then keep reading on the timers."""
        self.sample_memory()
        self.request_power()
        self.memory_timer.start()
        self.power_timer.start()

    def stop(self, wait_ms: int = 10_000) -> None:
        """Stop the timers; a power read in flight is waited for when the pool is this poller's own."""
        self.memory_timer.stop()
        self.power_timer.stop()
        if self._owns_runner:
            self.runner.shutdown(wait_ms)

    def sample_memory(self) -> None:
        """Read memory now and emit it (a failing reader is skipped, never raised)."""
        try:
            sample = self.read_memory()
        except Exception:  # a probe must not break the dashboard
            return
        self.memorySampled.emit(sample)

    def request_power(self) -> None:
        """Read power and low-power mode on the worker pool; powerRead follows."""
        if self._power_pending:
            return
        self._power_pending = True
        self.runner.run(self._read_power, self._power_arrived, self._power_failed)

    def _read_power(self) -> tuple[PowerStatus, bool | None]:
        return self.read_power(), self.read_low_power()

    def _power_arrived(self, reading: tuple[PowerStatus, bool | None]) -> None:
        self._power_pending = False
        self.powerRead.emit(*reading)

    def _power_failed(self, message: str) -> None:
        self._power_arrived((PowerStatus("unknown", None, None, f"Power check failed: {message}"), None))
