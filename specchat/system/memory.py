"""How much memory the machine has, and how much the GPU may use (Metal's working set)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MachineMemory:
    """Total and available RAM, and the GPU working-set limit when Metal reports one."""

    total_bytes: int
    available_bytes: int
    gpu_working_set_bytes: int | None
    source: str


def format_gb(n_bytes: int | float | None) -> str:
    """Bytes as decimal gigabytes with one decimal, e.g. "12.3 GB"."""
    if n_bytes is None:
        return "unknown"
    return f"{n_bytes / 1e9:.1f} GB"


def metal_working_set_bytes(mx_module: Any | None = None) -> int | None:
    """Metal's recommended GPU working set in bytes; None without Metal (e.g. CPU-only MLX)."""
    try:
        mx = mx_module if mx_module is not None else _import_mlx()
        if mx is None or not mx.metal.is_available():
            return None
        info = _device_info(mx)
    except Exception:  # MLX builds differ; a missing probe must not break the app
        return None
    value = info.get("max_recommended_working_set_size") if isinstance(info, dict) else None
    return int(value) if isinstance(value, (int, float)) and value > 0 else None


def _import_mlx() -> Any | None:
    try:
        import mlx.core as mx
    except ImportError:
        return None
    return mx


def _device_info(mx: Any) -> Any:
    # mx.device_info() replaced the deprecated mx.metal.device_info() in newer MLX.
    probe: Callable[[], Any] | None = getattr(mx, "device_info", None)
    if probe is None:
        probe = getattr(mx.metal, "device_info", None)
    return probe() if probe is not None else None


def read_machine_memory(virtual_memory: Callable[[], Any] | None = None, mx_module: Any | None = None) -> MachineMemory:
    """RAM totals from psutil plus Metal's working-set limit when there is one."""
    if virtual_memory is None:
        import psutil

        virtual_memory = psutil.virtual_memory
    vm = virtual_memory()
    working_set = metal_working_set_bytes(mx_module)
    source = "psutil + metal" if working_set is not None else "psutil"
    return MachineMemory(int(vm.total), int(vm.available), working_set, source)


@dataclass(frozen=True)
class MemorySample:
    """One reading of memory over time: MLX's allocator, this process, and the machine."""

    time: float  # seconds since the epoch
    mlx_active_bytes: int | None
    mlx_peak_bytes: int | None
    mlx_cache_bytes: int | None
    process_rss_bytes: int | None
    system_total_bytes: int
    system_available_bytes: int
    gpu_working_set_bytes: int | None = None


def read_mlx_memory(mx_module: Any | None = None) -> tuple[int | None, int | None, int | None]:
    """MLX's (active, peak, cache) bytes; Nones when MLX cannot be asked."""
    mx = mx_module if mx_module is not None else _import_mlx()
    if mx is None:
        return None, None, None
    readings: list[int | None] = []
    for name in ("get_active_memory", "get_peak_memory", "get_cache_memory"):
        try:
            readings.append(int(getattr(mx, name)()))
        except Exception:  # an MLX build without this probe: report it as unknown
            readings.append(None)
    return readings[0], readings[1], readings[2]


def read_process_rss(process: Any | None = None) -> int | None:
    """Resident memory of this process in bytes (psutil); None when it cannot be read."""
    try:
        if process is None:
            import psutil

            process = psutil.Process()
        return int(process.memory_info().rss)
    except Exception:  # psutil can be denied on locked-down systems
        return None


def read_memory_sample(
    clock: Callable[[], float] | None = None,
    virtual_memory: Callable[[], Any] | None = None,
    process: Any | None = None,
    mx_module: Any | None = None,
    working_set_bytes: int | None = None,
) -> MemorySample:
    """MLX active / peak / cache, process RSS and system total / available, right now."""
    import time

    if virtual_memory is None:
        import psutil

        virtual_memory = psutil.virtual_memory
    vm = virtual_memory()
    active, peak, cache = read_mlx_memory(mx_module)
    return MemorySample(
        time=(clock or time.time)(),
        mlx_active_bytes=active,
        mlx_peak_bytes=peak,
        mlx_cache_bytes=cache,
        process_rss_bytes=read_process_rss(process),
        system_total_bytes=int(vm.total),
        system_available_bytes=int(vm.available),
        gpu_working_set_bytes=working_set_bytes,
    )
