"""A short description of the machine and the MLX stack, for the About box and bug reports."""

from __future__ import annotations

import logging
import platform
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from specchat.system.memory import format_gb

log = logging.getLogger(__name__)
NOT_INSTALLED = "not installed"
TRACKED_PACKAGES = ("mlx", "mlx-lm", "mlx-optiq")
CPUINFO_PATH = Path("/proc/cpuinfo")


def parse_sysctl_value(text: str, key: str) -> str | None:
    """The value for key in `sysctl key` output ("key: value"), or the bare `sysctl -n` line."""
    for line in (text or "").splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() == key:
            return value.strip() or None
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    # A lone line without a colon is `sysctl -n` output; a colon means an error or another key.
    if len(lines) == 1 and ":" not in lines[0]:
        return lines[0]
    return None


def parse_cpuinfo_model(text: str) -> str | None:
    """The first "model name" from Linux /proc/cpuinfo text."""
    for line in (text or "").splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() == "model name" and value.strip():
            return value.strip()
    return None


def chip_name(
    runner: Callable[..., Any] = subprocess.run,
    cpuinfo_path: Path = CPUINFO_PATH,
    system: str | None = None,
) -> str:
    """The chip or CPU name: sysctl on macOS, /proc/cpuinfo on Linux, else platform."""
    if (system or sys.platform) == "darwin":
        name = _sysctl_brand(runner)
        if name:
            return name
    try:
        name = parse_cpuinfo_model(cpuinfo_path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        name = None
    return name or platform.processor() or platform.machine() or "unknown"


def _sysctl_brand(runner: Callable[..., Any]) -> str | None:
    key = "machdep.cpu.brand_string"
    try:
        result = runner(["sysctl", "-n", key], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_sysctl_value(result.stdout, key) if result.returncode == 0 else None


def package_version(name: str) -> str:
    """Installed version of a distribution, or "not installed"."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return NOT_INSTALLED


def mlx_default_device() -> str:
    """MLX's default device as text, e.g. "Device(gpu, 0)"; "unavailable" without MLX."""
    try:
        import mlx.core as mx

        return str(mx.default_device())
    except Exception as error:  # ImportError, or a broken native build
        return f"unavailable ({type(error).__name__})"


def _memory_total_bytes() -> int | None:
    import psutil

    try:
        return int(psutil.virtual_memory().total)
    except (OSError, psutil.Error) as error:  # /proc/meminfo unreadable, access denied on a locked-down system
        log.warning("cannot read the machine's memory size: %s", error)
        return None


def machine_info(runner: Callable[..., Any] = subprocess.run) -> dict[str, str | int | None]:
    """Chip, memory, OS, Python, MLX package versions and MLX default device."""
    total = _memory_total_bytes()
    info: dict[str, str | int | None] = {
        "chip": chip_name(runner),
        "memory_total_bytes": total,
        "memory_total": format_gb(total),
        "os": platform.platform(),
        "python": platform.python_version(),
    }
    for package in TRACKED_PACKAGES:
        info[package] = package_version(package)
    info["mlx_device"] = mlx_default_device()
    return info
