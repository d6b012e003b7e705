"""Tests for specchat.system.memory and specchat.system.machine against recorded macOS outputs."""

from __future__ import annotations

import subprocess
from collections import namedtuple
from pathlib import Path
from types import SimpleNamespace

import pytest

from specchat.system import machine
from specchat.system.machine import (
    NOT_INSTALLED,
    chip_name,
    machine_info,
    package_version,
    parse_cpuinfo_model,
    parse_sysctl_value,
)
from specchat.system.memory import (
    MachineMemory,
    MemorySample,
    format_gb,
    metal_working_set_bytes,
    read_machine_memory,
    read_memory_sample,
    read_mlx_memory,
)

DATA = Path(__file__).parent / "data" / "system"
VirtualMemory = namedtuple("VirtualMemory", "total available")


def recorded(name: str) -> str:
    return (DATA / name).read_text()


def fake_mx(available: bool, info: dict | None = None, new_api: bool = True):
    """A stand-in for mlx.core with just the Metal probes."""
    metal = SimpleNamespace(is_available=lambda: available)
    if not new_api:
        metal.device_info = lambda: info
    mx = SimpleNamespace(metal=metal)
    if new_api:
        mx.device_info = lambda: info
    return mx


@pytest.mark.parametrize(
    ("n_bytes", "text"),
    [(12_345_678_901, "12.3 GB"), (0, "0.0 GB"), (34_359_738_368, "34.4 GB"), (None, "unknown")],
)
def test_format_gb(n_bytes: int | None, text: str) -> None:
    assert format_gb(n_bytes) == text


# --- Metal working set ---


def test_metal_working_set_from_new_and_old_api() -> None:
    info = {"max_recommended_working_set_size": 22_906_503_168}
    assert metal_working_set_bytes(fake_mx(True, info)) == 22_906_503_168
    assert metal_working_set_bytes(fake_mx(True, info, new_api=False)) == 22_906_503_168


def test_metal_working_set_none_without_metal() -> None:
    info = {"max_recommended_working_set_size": 1}
    assert metal_working_set_bytes(fake_mx(False, info)) is None
    assert metal_working_set_bytes(fake_mx(True, {})) is None
    assert metal_working_set_bytes(SimpleNamespace()) is None  # no mx.metal at all


def test_read_machine_memory_combines_psutil_and_metal() -> None:
    info = {"max_recommended_working_set_size": 25_000_000_000}
    memory = read_machine_memory(lambda: VirtualMemory(32_000_000_000, 20_000_000_000), fake_mx(True, info))
    assert memory == MachineMemory(32_000_000_000, 20_000_000_000, 25_000_000_000, "psutil + metal")


def test_read_machine_memory_on_this_machine() -> None:
    memory = read_machine_memory()
    assert memory.total_bytes > 0 and 0 < memory.available_bytes <= memory.total_bytes
    if memory.gpu_working_set_bytes is None:
        assert memory.source == "psutil"


# --- machine ---


def test_parse_sysctl_value_key_and_bare_forms() -> None:
    key = "machdep.cpu.brand_string"
    assert parse_sysctl_value(recorded("sysctl_cpu_brand_string.txt"), key) == "Apple M3 Max"
    assert parse_sysctl_value(recorded("sysctl_n_cpu_brand_string.txt"), key) == "Apple M2 Pro"
    assert parse_sysctl_value(f"sysctl: unknown oid '{key}'", key) is None
    assert parse_sysctl_value("", key) is None


def test_parse_cpuinfo_model() -> None:
    expected = "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz"
    assert parse_cpuinfo_model(recorded("proc_cpuinfo.txt")) == expected
    assert parse_cpuinfo_model("processor : 0\n") is None


def test_chip_name_on_macos_uses_sysctl(tmp_path: Path) -> None:
    calls = []

    def runner(args, **kwargs):
        calls.append(args)
        return subprocess.CompletedProcess(args, 0, stdout="Apple M4 Pro\n", stderr="")

    assert chip_name(runner, tmp_path / "no-cpuinfo", system="darwin") == "Apple M4 Pro"
    assert calls == [["sysctl", "-n", "machdep.cpu.brand_string"]]


def test_chip_name_on_linux_reads_cpuinfo() -> None:
    def runner(args, **kwargs):
        raise AssertionError("sysctl must not run off macOS")

    name = chip_name(runner, DATA / "proc_cpuinfo.txt", system="linux")
    assert name == "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz"


def test_chip_name_falls_back_when_sysctl_fails(tmp_path: Path) -> None:
    def runner(args, **kwargs):
        raise FileNotFoundError("sysctl")

    name = chip_name(runner, tmp_path / "missing", system="darwin")
    assert isinstance(name, str) and name


def test_package_version() -> None:
    assert package_version("pytest") == pytest.__version__
    assert package_version("no-such-package-specchat-test") == NOT_INSTALLED


def test_machine_info_has_expected_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine, "package_version", lambda name: NOT_INSTALLED if name == "mlx-optiq" else "9.9")
    info = machine_info()
    assert info["mlx"] == "9.9" and info["mlx-lm"] == "9.9"
    assert info["mlx-optiq"] == NOT_INSTALLED
    assert info["memory_total"].endswith(" GB") and info["memory_total_bytes"] > 0
    assert info["python"].count(".") == 2
    assert info["chip"] and info["os"]
    assert info["mlx_device"].startswith("Device(")


# --- memory samples over time ---


def test_memory_sample_combines_mlx_process_and_system() -> None:
    mx = SimpleNamespace(get_active_memory=lambda: 3_000, get_peak_memory=lambda: 5_000, get_cache_memory=lambda: 700)
    process = SimpleNamespace(memory_info=lambda: SimpleNamespace(rss=9_000))
    sample = read_memory_sample(
        clock=lambda: 123.5,
        virtual_memory=lambda: VirtualMemory(64_000, 40_000),
        process=process,
        mx_module=mx,
        working_set_bytes=48_000,
    )
    assert sample == MemorySample(123.5, 3_000, 5_000, 700, 9_000, 64_000, 40_000, 48_000)


def test_memory_sample_missing_probes_are_none() -> None:
    mx = SimpleNamespace(get_active_memory=lambda: 10)  # an MLX without peak / cache probes

    class Denied:
        def memory_info(self):
            raise PermissionError("denied")

    assert read_mlx_memory(mx) == (10, None, None)
    sample = read_memory_sample(virtual_memory=lambda: VirtualMemory(8, 4), process=Denied(), mx_module=mx)
    assert (sample.mlx_peak_bytes, sample.process_rss_bytes, sample.system_available_bytes) == (None, None, 4)


def test_memory_sample_on_this_machine_sees_mlx_allocations() -> None:
    import mlx.core as mx

    before = read_memory_sample()
    array = mx.zeros((1024, 1024), dtype=mx.float32)  # 4 MiB
    mx.eval(array)
    after = read_memory_sample()
    assert after.mlx_active_bytes - before.mlx_active_bytes >= 4 * 1024 * 1024
    assert after.mlx_peak_bytes >= after.mlx_active_bytes
    assert 0 < after.system_available_bytes <= after.system_total_bytes
    assert after.process_rss_bytes > 0 and after.time >= before.time
