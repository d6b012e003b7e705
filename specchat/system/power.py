"""Is the machine on mains power or battery? (pmset on macOS, sysfs on Linux, psutil otherwise)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

PowerSource = Literal["ac", "battery", "unknown"]

DEFAULT_SYSFS_ROOT = Path("/sys/class/power_supply")
DEFAULT_PLATFORM_PROFILE = Path("/sys/firmware/acpi/platform_profile")
NO_BATTERY_DETAIL = "No battery found; assuming mains power"

_PMSET_SOURCE = re.compile(r"Now drawing from '([^']+)'")
_PMSET_BATTERY = re.compile(
    r"-InternalBattery-\d+[^\n]*?\s(\d+(?:\.\d+)?)%;\s*([^;\n]+?)\s*(?:;|present:|$)", re.MULTILINE
)
_PMSET_SOURCES: dict[str, PowerSource] = {
    "AC Power": "ac",
    "Battery Power": "battery",
    "UPS Power": "battery",
}
_CHARGING_WORDS = {
    "charging": True,
    "finishing charge": True,
    "charged": False,
    "discharging": False,
    "ac attached": False,
}
_SYSFS_CHARGING = {"charging": True, "discharging": False, "full": False, "not charging": False}


@dataclass(frozen=True)
class PowerStatus:
    """Where power comes from right now, and the battery state when there is one."""

    source: PowerSource
    percent: float | None
    charging: bool | None
    detail: str


def unknown_power(detail: str) -> PowerStatus:
    """A status for when the power source cannot be told."""
    return PowerStatus("unknown", None, None, detail)


def no_battery_power() -> PowerStatus:
    """A status for a machine without a battery (a desktop): always on mains."""
    return PowerStatus("ac", None, None, NO_BATTERY_DETAIL)


# --- macOS: pmset -g batt ---


def parse_pmset_batt(text: str) -> PowerStatus:
    """Parse the output of macOS `pmset -g batt`; odd output gives an unknown status."""
    source_match = _PMSET_SOURCE.search(text or "")
    if source_match is None:
        return unknown_power(f"Unrecognised pmset output: {_first_line(text)!r}")
    source_name = source_match.group(1)
    source = _PMSET_SOURCES.get(source_name, "unknown")
    battery_match = _PMSET_BATTERY.search(text)
    if battery_match is None:
        if source == "ac":
            return PowerStatus("ac", None, None, f"{NO_BATTERY_DETAIL} (pmset: {source_name})")
        return unknown_power(f"pmset reports {source_name} but no battery line")
    percent = float(battery_match.group(1))
    state = battery_match.group(2).strip().lower()
    charging = _CHARGING_WORDS.get(state)
    detail = f"{source_name}, battery {percent:g}% ({state})"
    return PowerStatus(source, percent, charging, detail)


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0][:80] if lines else ""


def _read_pmset(runner: Callable[..., Any]) -> PowerStatus | None:
    """Run pmset; None when it cannot be run at all."""
    try:
        result = runner(["pmset", "-g", "batt"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    return parse_pmset_batt(result.stdout)


# --- Linux: /sys/class/power_supply ---


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def read_sysfs_power(root: Path = DEFAULT_SYSFS_ROOT) -> PowerStatus | None:
    """Read Linux power supplies under root; None when there are none to read."""
    try:
        supplies = sorted(p for p in Path(root).iterdir() if p.is_dir())
    except OSError:
        return None
    mains_online: list[bool] = []
    batteries: list[Path] = []
    for supply in supplies:
        kind = (_read_text(supply / "type") or "").lower()
        if kind == "battery":
            # scope=Device marks a peripheral's battery (mouse, headset), not the machine's.
            if (_read_text(supply / "scope") or "").lower() != "device":
                batteries.append(supply)
        elif kind in ("mains", "usb", "usb_c", "usb_pd", "wireless"):
            online = _read_text(supply / "online")
            if online in ("0", "1"):
                mains_online.append(online == "1")
    if not mains_online and not batteries:
        return None
    return _sysfs_status(any(mains_online), bool(mains_online), batteries)


def _sysfs_status(on_mains: bool, mains_known: bool, batteries: list[Path]) -> PowerStatus:
    if not batteries:
        if on_mains:
            return PowerStatus("ac", None, None, f"{NO_BATTERY_DETAIL} (mains online)")
        return unknown_power("No battery and no mains supply online in sysfs")
    battery = batteries[0]
    percent = _parse_percent(_read_text(battery / "capacity"))
    status = (_read_text(battery / "status") or "unknown").lower()
    charging = _SYSFS_CHARGING.get(status)
    if mains_known:
        source: PowerSource = "ac" if on_mains else "battery"
    elif status == "discharging":
        source = "battery"
    elif status in ("charging", "full", "not charging"):
        source = "ac"
    else:
        return PowerStatus("unknown", percent, charging, f"{battery.name}: status {status!r}")
    shown = f"{percent:g}%" if percent is not None else "unknown %"
    detail = f"{'Mains' if source == 'ac' else 'Battery'} power, {battery.name} {shown} ({status})"
    return PowerStatus(source, percent, charging, detail)


def _parse_percent(text: str | None) -> float | None:
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    return value if value is not None and 0 <= value <= 100 else None


# --- psutil fallback ---


def read_psutil_power(sensors_battery: Callable[[], Any] | None = None) -> PowerStatus:
    """Ask psutil; no battery reported means a desktop on mains."""
    if sensors_battery is None:
        import psutil

        sensors_battery = getattr(psutil, "sensors_battery", None)
        if sensors_battery is None:
            return unknown_power("psutil cannot read batteries on this platform")
    try:
        battery = sensors_battery()
    except Exception as error:  # psutil raises assorted errors on odd hardware
        return unknown_power(f"psutil battery read failed: {error}")
    if battery is None:
        return no_battery_power()
    plugged = battery.power_plugged
    percent = float(battery.percent) if battery.percent is not None else None
    if plugged is None:
        return PowerStatus("unknown", percent, None, "psutil: battery found, plug state unknown")
    source: PowerSource = "ac" if plugged else "battery"
    charging = None if plugged else False  # psutil cannot tell charging from full
    return PowerStatus(source, percent, charging, f"psutil: {source}, battery {percent:g}%")


# --- low-power mode: pmset -g on macOS, the ACPI platform profile on Linux ---

_PMSET_SETTING = re.compile(r"^\s*(lowpowermode|powermode)\s+(\d+)\b", re.MULTILINE)
_POWERMODE_LOW = 1  # `powermode` (Macs with High Power Mode): 0 automatic, 1 low power, 2 high power


def parse_pmset_low_power(text: str) -> bool | None:
    """Low-power mode from macOS `pmset -g`; None when the output has no such setting."""
    text = text or ""
    in_use = text.split("Currently in use:", 1)[-1]  # only the settings in force, not other profiles
    match = _PMSET_SETTING.search(in_use)
    if match is None:
        return None
    name, value = match.group(1), int(match.group(2))
    return value == _POWERMODE_LOW if name == "powermode" else value != 0


def read_platform_profile_low_power(path: Path = DEFAULT_PLATFORM_PROFILE) -> bool | None:
    """Linux: True when the ACPI platform profile is "low-power"; None when there is none."""
    profile = _read_text(Path(path))
    return None if not profile else profile.lower() == "low-power"


def read_low_power_mode(
    runner: Callable[..., Any] = subprocess.run,
    profile_path: Path = DEFAULT_PLATFORM_PROFILE,
    *,
    platform: str | None = None,
) -> bool | None:
    """Is a low-power mode on? pmset -g on macOS, the platform profile on Linux; None if unknown. Never raises."""
    platform = platform or sys.platform
    try:
        if platform != "darwin":
            return read_platform_profile_low_power(profile_path)
        result = runner(["pmset", "-g"], capture_output=True, text=True, timeout=5, check=False)
        return parse_pmset_low_power(result.stdout) if result.returncode == 0 else None
    except Exception:  # a probe must never take the app down; unknown is a fine answer
        return None


# --- the one call the app makes ---


def read_power(
    runner: Callable[..., Any] = subprocess.run,
    sysfs_root: Path = DEFAULT_SYSFS_ROOT,
    *,
    platform: str | None = None,
    sensors_battery: Callable[[], Any] | None = None,
) -> PowerStatus:
    """Current power status: pmset on macOS, else sysfs, else psutil; never raises."""
    platform = platform or sys.platform
    try:
        if platform == "darwin":
            status = _read_pmset(runner)
        else:
            status = read_sysfs_power(sysfs_root)
        return status if status is not None else read_psutil_power(sensors_battery)
    except Exception as error:  # a power probe must never take the app down
        return unknown_power(f"Power check failed: {error}")
