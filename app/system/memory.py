"""How much memory the machine has, and how much the GPU may use (Metal's working set)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_SYSCTL_MEMSIZE = re.compile(r"^\s*hw\.memsize\s*[:=]\s*(\d+)\s*$", re.MULTILINE)
_VM_STAT_PAGE_SIZE = re.compile(r"page size of (\d+) bytes")
_VM_STAT_LINE = re.compile(r'^\s*"?([^":]+?)"?\s*:\s*(\d+)\.?\s*$', re.MULTILINE)
_VM_STAT_AVAILABLE = ("Pages free", "Pages inactive", "Pages speculative", "Pages purgeable")


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


def parse_sysctl_memsize(text: str) -> int | None:
    """Total RAM in bytes from `sysctl hw.memsize` (or bare `sysctl -n hw.memsize`) output."""
    match = _SYSCTL_MEMSIZE.search(text or "")
    if match:
        return int(match.group(1))
    bare = (text or "").strip()
    return int(bare) if bare.isdigit() else None


def parse_vm_stat(text: str) -> int | None:
    """Available bytes from macOS `vm_stat`: (free + inactive + speculative + purgeable) pages."""
    page_match = _VM_STAT_PAGE_SIZE.search(text or "")
    if page_match is None:
        return None
    counts = {name.strip(): int(value) for name, value in _VM_STAT_LINE.findall(text)}
    if "Pages free" not in counts:
        return None
    pages = sum(counts.get(name, 0) for name in _VM_STAT_AVAILABLE)
    return pages * int(page_match.group(1))


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


def read_machine_memory(
    virtual_memory: Callable[[], Any] | None = None, mx_module: Any | None = None
) -> MachineMemory:
    """RAM totals from psutil plus Metal's working-set limit when there is one."""
    if virtual_memory is None:
        import psutil

        virtual_memory = psutil.virtual_memory
    vm = virtual_memory()
    working_set = metal_working_set_bytes(mx_module)
    source = "psutil + metal" if working_set is not None else "psutil"
    return MachineMemory(int(vm.total), int(vm.available), working_set, source)
