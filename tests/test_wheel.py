"""The wheel carries the catalog and icon: built, installed without -e, and run outside the checkout."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.install_check import catalog_lines, probe_resources, run_app

REPO_ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("specchat/assets/catalog.json", "specchat/assets/icon/specchat.png")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel, built from a copy of the sources (setuptools writes build/ beside them)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO_ROOT / name, source / name)
    shutil.copytree(REPO_ROOT / "specchat", source / "specchat", ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(tmp / "dist"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [built] = (tmp / "dist").glob("specchat-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """The wheel installed (not editable) into its own site folder."""
    site = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return site


@pytest.mark.slow
def test_wheel_holds_the_assets(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert set(SHIPPED) <= names
    assert not any(n.startswith(("tests/", "resources/", "packaging/")) for n in names)


@pytest.mark.slow
def test_wheel_installs_one_top_level_package_named_specchat(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top_level == {"specchat"}
    [record] = [n for n in names if n.endswith(".dist-info/top_level.txt")] or [None]
    if record is not None:
        assert zipfile.ZipFile(wheel).read(record).decode().split() == ["specchat"]


@pytest.mark.slow
def test_installed_wheel_reads_its_own_assets(installed, tmp_path):
    found = probe_resources(installed, tmp_path, ["catalog.json", "icon/specchat.png"])
    assert Path(found["package"]).is_relative_to(installed)  # the install ran, not the source tree
    for name, path in found["paths"].items():
        assert Path(path) == installed / "specchat" / "assets" / name
    assert isinstance(found["catalog_models"], int) and found["catalog_models"] >= 5


@pytest.mark.slow
def test_installed_wheel_searches_the_catalog(installed, tmp_path):
    done = run_app(installed, tmp_path, "models", "search", "qwen3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("offline")
    assert "mlx-community/Qwen3-8B-4bit" in done.stdout and len(catalog_lines(done.stdout)) >= 5
