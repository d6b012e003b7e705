"""Reads memory (cheap, on the UI thread) and power (runs pmset, so on a pool thread) every few seconds."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QThreadPool, QTimer, Signal

from specchat.system.memory import MemorySample, metal_working_set_bytes, read_memory_sample
from specchat.system.power import PowerStatus, read_low_power_mode, read_power

MEMORY_INTERVAL_MS = 1000
POWER_INTERVAL_MS = 5000


def default_memory_reader() -> Callable[[], MemorySample]:
    """read_memory_sample bound to this process and Metal's working set (both looked up once)."""
    import psutil

    process = psutil.Process()
    working_set = metal_working_set_bytes()
    return lambda: read_memory_sample(process=process, working_set_bytes=working_set)


class _Bridge(QObject):
    """Carries a power reading from the pool thread back to the UI thread."""

    done = Signal(object, object)  # PowerStatus, low-power mode (bool | None)


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
    ):
        super().__init__(parent)
        self.read_memory = read_memory or default_memory_reader()
        self.read_power = read_power
        self.read_low_power = read_low_power
        self.pool = QThreadPool()
        self.pool.setMaxThreadCount(1)
        self._bridge = _Bridge()  # parentless and referenced by queued jobs: outlives any job
        self._power_pending = False
        self._bridge.done.connect(self._power_arrived)
        self._bridge.done.connect(self.powerRead)
        self.memory_timer = QTimer(self, interval=memory_interval_ms, timeout=self.sample_memory)
        self.power_timer = QTimer(self, interval=power_interval_ms, timeout=self.request_power)

    def start(self) -> None:
        """Read both now, then keep reading on the timers."""
        self.sample_memory()
        self.request_power()
        self.memory_timer.start()
        self.power_timer.start()

    def stop(self, wait_ms: int = 10_000) -> None:
        """Stop the timers and wait for a power read in flight."""
        self.memory_timer.stop()
        self.power_timer.stop()
        self.pool.waitForDone(wait_ms)

    def sample_memory(self) -> None:
        """Read memory now and emit it (a failing reader is skipped, never raised)."""
        try:
            sample = self.read_memory()
        except Exception:  # a probe must not break the dashboard
            return
        self.memorySampled.emit(sample)

    def request_power(self) -> None:
        """Read power and low-power mode on the pool thread; powerRead follows."""
        if self._power_pending:
            return
        self._power_pending = True
        bridge, read_power, read_low_power = self._bridge, self.read_power, self.read_low_power

        def job() -> None:
            try:
                status, low_power = read_power(), read_low_power()
            except Exception as error:
                status, low_power = PowerStatus("unknown", None, None, f"Power check failed: {error}"), None
            bridge.done.emit(status, low_power)

        self.pool.start(job)

    def _power_arrived(self, *_args) -> None:
        self._power_pending = False
