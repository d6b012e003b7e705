"""Tests for specchat.system.power against recorded pmset output and fake sysfs trees."""

from __future__ import annotations

import subprocess
from collections import namedtuple
from pathlib import Path

import pytest

from specchat.system.power import (
    PowerStatus,
    parse_pmset_batt,
    parse_pmset_low_power,
    read_low_power_mode,
    read_platform_profile_low_power,
    read_power,
    read_psutil_power,
    read_sysfs_power,
)

DATA = Path(__file__).parent / "data" / "system"
Battery = namedtuple("Battery", "percent secsleft power_plugged")


def recorded(name: str) -> str:
    return (DATA / name).read_text()


def make_supply(root: Path, name: str, **files: str) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    for file_name, content in files.items():
        (folder / file_name).write_text(content + "\n")


def fake_runner(stdout: str, returncode: int = 0):
    calls = []

    def run(args, **kwargs):
        calls.append(args)
        return subprocess.CompletedProcess(args, returncode, stdout=stdout, stderr="")

    run.calls = calls
    return run


# --- pmset ---


@pytest.mark.parametrize(
    ("sample", "source", "percent", "charging"),
    [
        ("pmset_ac_charged.txt", "ac", 100.0, False),
        ("pmset_ac_charging.txt", "ac", 64.0, True),
        ("pmset_ac_not_charging.txt", "ac", 80.0, False),
        ("pmset_battery_discharging.txt", "battery", 87.0, False),
        ("pmset_battery_no_estimate.txt", "battery", 42.0, False),
    ],
)
def test_pmset_with_battery(sample: str, source: str, percent: float, charging: bool) -> None:
    status = parse_pmset_batt(recorded(sample))
    assert (status.source, status.percent, status.charging) == (source, percent, charging)


def test_pmset_desktop_mac_without_battery_is_ac() -> None:
    status = parse_pmset_batt(recorded("pmset_desktop_no_battery.txt"))
    assert status == PowerStatus("ac", None, None, status.detail)
    assert "no battery" in status.detail.lower()


@pytest.mark.parametrize("text", [recorded("pmset_garbage.txt"), "", "\n\n"])
def test_pmset_garbage_is_unknown(text: str) -> None:
    status = parse_pmset_batt(text)
    assert status.source == "unknown" and status.percent is None
    assert "pmset" in status.detail


def test_pmset_battery_source_without_battery_line_is_unknown() -> None:
    assert parse_pmset_batt("Now drawing from 'Battery Power'\n").source == "unknown"


# --- sysfs ---


def test_sysfs_ac_online_with_battery_discharging_trusts_mains(tmp_path: Path) -> None:
    # Some laptops report "Discharging" briefly after plugging in; the mains "online" flag wins.
    make_supply(tmp_path, "AC", type="Mains", online="1")
    make_supply(tmp_path, "BAT0", type="Battery", capacity="76", status="Discharging")
    status = read_sysfs_power(tmp_path)
    assert (status.source, status.percent, status.charging) == ("ac", 76.0, False)


def test_sysfs_unplugged_laptop_is_battery(tmp_path: Path) -> None:
    make_supply(tmp_path, "ADP1", type="Mains", online="0")
    make_supply(tmp_path, "BAT0", type="Battery", capacity="31", status="Discharging")
    status = read_sysfs_power(tmp_path)
    assert (status.source, status.percent, status.charging) == ("battery", 31.0, False)
    assert "BAT0" in status.detail


def test_sysfs_battery_without_mains_entry_uses_status(tmp_path: Path) -> None:
    make_supply(tmp_path, "BAT1", type="Battery", capacity="55", status="Charging")
    status = read_sysfs_power(tmp_path)
    assert (status.source, status.charging) == ("ac", True)


def test_sysfs_ignores_peripheral_batteries(tmp_path: Path) -> None:
    make_supply(tmp_path, "AC", type="Mains", online="1")
    make_supply(tmp_path, "hidpp_battery_0", type="Battery", scope="Device", capacity="5", status="Discharging")
    status = read_sysfs_power(tmp_path)
    assert status.source == "ac" and status.percent is None
    assert "no battery" in status.detail.lower()


def test_sysfs_odd_values_do_not_raise(tmp_path: Path) -> None:
    make_supply(tmp_path, "BAT0", type="Battery", capacity="lots", status="Weird")
    status = read_sysfs_power(tmp_path)
    assert status.source == "unknown" and status.percent is None


def test_sysfs_empty_or_missing_folder_gives_none(tmp_path: Path) -> None:
    assert read_sysfs_power(tmp_path) is None
    assert read_sysfs_power(tmp_path / "absent") is None


# --- psutil ---


def test_psutil_no_battery_is_ac() -> None:
    status = read_psutil_power(lambda: None)
    assert status.source == "ac" and "no battery" in status.detail.lower()


def test_psutil_unplugged_battery() -> None:
    status = read_psutil_power(lambda: Battery(40, 3600, False))
    assert (status.source, status.percent, status.charging) == ("battery", 40.0, False)


def test_psutil_error_is_unknown() -> None:
    def broken():
        raise RuntimeError("no ACPI")

    status = read_psutil_power(broken)
    assert status.source == "unknown" and "no ACPI" in status.detail


# --- read_power ---


def test_read_power_on_macos_runs_pmset() -> None:
    runner = fake_runner(recorded("pmset_battery_discharging.txt"))
    status = read_power(runner, platform="darwin")
    assert runner.calls == [["pmset", "-g", "batt"]]
    assert status.source == "battery" and status.percent == 87.0


def test_read_power_on_macos_falls_back_to_psutil_when_pmset_missing() -> None:
    def missing(args, **kwargs):
        raise FileNotFoundError("pmset")

    status = read_power(missing, platform="darwin", sensors_battery=lambda: Battery(90, -2, True))
    assert (status.source, status.percent) == ("ac", 90.0)


def test_read_power_on_linux_prefers_sysfs(tmp_path: Path) -> None:
    make_supply(tmp_path, "AC0", type="Mains", online="0")
    make_supply(tmp_path, "BAT0", type="Battery", capacity="12", status="Discharging")
    status = read_power(sysfs_root=tmp_path, platform="linux", sensors_battery=lambda: Battery(99, 1, True))
    assert (status.source, status.percent) == ("battery", 12.0)


def test_read_power_desktop_without_any_battery_is_ac(tmp_path: Path) -> None:
    status = read_power(sysfs_root=tmp_path, platform="linux", sensors_battery=lambda: None)
    assert status.source == "ac" and "no battery" in status.detail.lower()


def test_read_power_never_raises() -> None:
    def odd_runner(args, **kwargs):
        return object()  # no returncode/stdout: the pmset reader itself would raise

    status = read_power(odd_runner, platform="darwin")
    assert status.source == "unknown" and "failed" in status.detail.lower()


def test_read_power_on_this_machine_returns_a_status() -> None:
    assert read_power().source in ("ac", "battery", "unknown")


# --- low-power mode ---


@pytest.mark.parametrize(
    ("sample", "low_power"),
    [
        ("pmset_g_laptop_lowpower_on.txt", True),
        ("pmset_g_laptop_lowpower_off.txt", False),
        ("pmset_g_powermode_low.txt", True),  # High Power Mode Macs: powermode 1 is low power
        ("pmset_g_powermode_high.txt", False),  # powermode 2 is high power
        ("pmset_g_desktop.txt", False),
        ("pmset_g_intel_no_key.txt", None),  # no such setting: unknown
        ("pmset_garbage.txt", None),
    ],
)
def test_pmset_low_power_mode(sample: str, low_power: bool | None) -> None:
    assert parse_pmset_low_power(recorded(sample)) is low_power


def test_pmset_low_power_reads_only_the_settings_in_use() -> None:
    custom = "Battery Power:\n lowpowermode         1\nCurrently in use:\n lowpowermode         0\n"
    assert parse_pmset_low_power(custom) is False


def test_read_low_power_mode_on_macos_runs_pmset_g() -> None:
    runner = fake_runner(recorded("pmset_g_laptop_lowpower_on.txt"))
    assert read_low_power_mode(runner, platform="darwin") is True
    assert runner.calls == [["pmset", "-g"]]


def test_read_low_power_mode_on_macos_failures_are_unknown() -> None:
    def missing(args, **kwargs):
        raise FileNotFoundError("pmset")

    assert read_low_power_mode(missing, platform="darwin") is None
    assert read_low_power_mode(fake_runner("", returncode=1), platform="darwin") is None
    assert read_low_power_mode(lambda *a, **k: object(), platform="darwin") is None


@pytest.mark.parametrize(("profile", "low_power"), [("low-power", True), ("balanced", False), ("performance", False)])
def test_linux_platform_profile(tmp_path: Path, profile: str, low_power: bool) -> None:
    (tmp_path / "platform_profile").write_text(profile + "\n")
    assert read_platform_profile_low_power(tmp_path / "platform_profile") is low_power
    assert read_low_power_mode(profile_path=tmp_path / "platform_profile", platform="linux") is low_power


def test_linux_without_platform_profile_is_unknown(tmp_path: Path) -> None:
    assert read_low_power_mode(profile_path=tmp_path / "absent", platform="linux") is None
