"""The macOS packaging: py2app options, resources (from a checkout and a simulated bundle), icon, build script."""

from __future__ import annotations

import importlib.util
import json
import os
import plistlib
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import specchat
from specchat.resources import assets_root, read_text, resource_path
from tests.install_check import catalog_lines, probe_resources
from tests.install_check import run_app as run_installed_app

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGING = REPO_ROOT / "packaging"
RESOURCES = REPO_ROOT / "specchat" / "assets"  # package data, read through importlib.resources
# specchat.resources' accessors called with a literal name (not `path.read_text(...)`).
RESOURCE_CALL = re.compile(r"""(?<![.\w])(?:resource_path|read_text|as_file)\(\s*["']([^"']+)["']""")
# Packages py2app's import scan misses (dynamic imports, Qt plugins, data files).
REQUIRED_PACKAGES = (
    "specchat",
    "mlx_lm",
    "optiq",
    "PySide6",
    "pyqtgraph",
    "huggingface_hub",
    "platformdirs",
    "psutil",
    "jinja2",
    "transformers",
    "tokenizers",
)


def load_packaging_module(name: str):
    """Import packaging/<name>.py by path (packaging/ is scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"specchat_packaging_{name}", PACKAGING / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def setup_module_():
    return load_packaging_module("setup_py2app")


@pytest.fixture(scope="module")
def options(setup_module_):
    return setup_module_.py2app_options()


def pyproject_version() -> str:
    with open(REPO_ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["version"]


# --- py2app options -------------------------------------------------------------------------


def test_setup_script_loads_without_py2app_or_building(setup_module_):
    assert "py2app" not in sys.modules
    assert importlib.util.find_spec("py2app") is None or sys.platform == "darwin"
    assert callable(setup_module_.main) and callable(setup_module_.setup_kwargs)


def test_plist_has_the_bundle_keys(options):
    plist = options["plist"]
    version = pyproject_version()
    assert plist["CFBundleName"] == "SpecChat"
    assert re.fullmatch(r"[a-z]+(\.[A-Za-z]+)+", plist["CFBundleIdentifier"])
    assert plist["CFBundleShortVersionString"] == version == specchat.__version__
    assert plist["CFBundleVersion"] == version
    assert plist["LSMinimumSystemVersion"] == "14.0"  # no mlx >= 0.30 wheels for macOS 13
    assert plist["NSHighResolutionCapable"] is True
    assert plist["LSArchitecturePriority"] == ["arm64"]
    assert "SpecChat" in plist["NSHumanReadableCopyright"]
    assert plistlib.loads(plistlib.dumps(plist)) == plist  # every value is plist-serialisable


def test_version_is_read_from_pyproject(setup_module_, tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\nversion = "9.8.7"\n')
    assert setup_module_.project_version(pyproject) == "9.8.7"
    plist = setup_module_.py2app_options("9.8.7")["plist"]
    assert plist["CFBundleShortVersionString"] == plist["CFBundleVersion"] == "9.8.7"


def test_missed_packages_are_included_and_findable(options):
    assert set(REQUIRED_PACKAGES) <= set(options["packages"])
    for name in options["packages"]:
        spec = importlib.util.find_spec(name)
        # py2app's `packages` option locates packages with imp.find_module: regular packages only.
        assert spec is not None and spec.origin and spec.origin.endswith("__init__.py"), name
    assert "mlx_lm.models.*" in options["includes"]


def test_mlx_namespace_package_is_copied_whole_with_metadata(setup_module_, options):
    [(dest, sources)] = setup_module_.data_files()
    assert dest == f"lib/python{sys.version_info.major}.{sys.version_info.minor}"
    folders = [Path(s) for s in sources]
    mlx_dirs = [f for f in folders if f.name == "mlx"]
    assert mlx_dirs and any(list(d.glob("core*.so")) for d in mlx_dirs)  # the native core comes along
    assert any(f.name.startswith("mlx-") and f.name.endswith(".dist-info") for f in folders)
    assert "mlx" in options["excludes"] and "mlx" not in options["packages"]


def test_qt_plugins_and_exclusions(options):
    assert {"platforms/libqcocoa.dylib", "styles", "imageformats"} <= set(options["qt_plugins"])
    assert {"tests", "pytest", "_pytest", "pytestqt"} <= set(options["excludes"])
    assert not any(p == "tests" or p.startswith("tests.") for p in options["packages"] + options["includes"])
    assert options["arch"] == "arm64" and options["argv_emulation"] is False


def test_resources_icon_and_launcher_paths(setup_module_, options):
    # No loose resources folder: the assets travel inside the `specchat` package, copied whole.
    assert "resources" not in options and "specchat" in options["packages"]
    assert setup_module_.ICON_SOURCE == RESOURCES / "icon" / "specchat.png"
    assert Path(options["iconfile"]).name == "SpecChat.icns"
    assert setup_module_.ICON_SOURCE.is_file()
    kwargs = setup_module_.setup_kwargs()
    assert kwargs["name"] == "SpecChat" and kwargs["version"] == pyproject_version()
    assert [Path(p) for p in kwargs["app"]] == [PACKAGING / "specchat_launcher.py"]
    assert kwargs["options"]["py2app"]["plist"] == options["plist"]


def test_setup_main_refuses_to_build_off_macos(setup_module_, monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    with pytest.raises(SystemExit, match="only be built on macOS"):
        setup_module_.main()


# --- resources the app references -----------------------------------------------------------


def referenced_resources(*roots: Path) -> dict[str, list[Path]]:
    """resource_path("...") literal names -> the files using them, under the given folders/files."""
    found: dict[str, list[Path]] = {}
    for root in roots:
        files = [root] if root.is_file() else sorted(root.rglob("*.py"))
        for file in files:
            for name in RESOURCE_CALL.findall(file.read_text(encoding="utf-8")):
                found.setdefault(name, []).append(file)
    return found


def test_reference_scan_reports_missing_resources(tmp_path):
    (tmp_path / "view.py").write_text(
        "icon = resource_path(\"icon/missing.png\")\nstyle = read_text( 'style.qss' )\ntext = path.read_text('utf-8')\n"
    )
    refs = referenced_resources(tmp_path)
    assert sorted(refs) == ["icon/missing.png", "style.qss"]
    assert not (RESOURCES / "icon" / "missing.png").exists()


def test_every_referenced_resource_exists():
    refs = referenced_resources(REPO_ROOT / "specchat", PACKAGING / "specchat_launcher.py")
    assert "icon/specchat.png" in refs
    missing = {
        name: [str(f.relative_to(REPO_ROOT)) for f in files]
        for name, files in refs.items()
        if not (RESOURCES / name).is_file()
    }
    assert not missing, f"resources referenced but not in specchat/assets/: {missing}"


# --- resource lookup ------------------------------------------------------------------------


def make_bundle(tmp_path: Path, setup_module_) -> tuple[Path, Path]:
    """(Contents, its lib folder) of a SpecChat.app laid out as py2app does it: every package of
    `packages` is copied whole (data files too) to Contents/Resources/lib/pythonX.Y/<name>."""
    contents = tmp_path / "SpecChat.app" / "Contents"
    (contents / "MacOS").mkdir(parents=True)
    package = contents / "Resources" / setup_module_.bundle_package_dir("specchat")
    shutil.copytree(REPO_ROOT / "specchat", package, ignore=shutil.ignore_patterns("__pycache__"))
    return contents, package.parent


def shipped_resource_names() -> list[str]:
    """Every resource the app and the launcher name, plus the catalog."""
    refs = referenced_resources(REPO_ROOT / "specchat", PACKAGING / "specchat_launcher.py")
    return sorted(set(refs) | {"catalog.json"})


def test_lookup_from_the_source_checkout():
    assert Path(str(assets_root())) == RESOURCES == Path(specchat.__file__).parent / "assets"
    assert resource_path("icon/specchat.png") == RESOURCES / "icon" / "specchat.png"
    assert json.loads(read_text("catalog.json"))["models"]


def test_lookup_inside_a_simulated_bundle(tmp_path, setup_module_):
    contents, lib = make_bundle(tmp_path, setup_module_)
    names = shipped_resource_names()
    assert {"catalog.json", "icon/specchat.png"} <= set(names)
    found = probe_resources(lib, tmp_path, names)
    assert Path(found["package"]).is_relative_to(contents)  # the bundle's copy ran, not the checkout
    for name in names:
        assert Path(found["paths"][name]) == lib / "specchat" / "assets" / name
    assert found["catalog_models"] == len(json.loads(read_text("catalog.json"))["models"])


def test_models_search_runs_from_the_bundle_layout(tmp_path, setup_module_):
    contents, lib = make_bundle(tmp_path, setup_module_)
    done = run_installed_app(lib, tmp_path, "models", "search", "qwen3")
    assert done.returncode == 0, done.stderr
    assert "mlx-community/Qwen3-8B-4bit" in done.stdout and len(catalog_lines(done.stdout)) >= 5


def test_bundle_lookup_never_falls_back_to_the_checkout(tmp_path, setup_module_):
    contents, lib = make_bundle(tmp_path, setup_module_)
    (lib / "specchat" / "assets" / "icon" / "specchat.png").unlink()
    found = probe_resources(lib, tmp_path, ["icon/specchat.png", "catalog.json"])
    missing = found["paths"]["icon/specchat.png"]
    assert missing.startswith("missing: ") and str(lib / "specchat" / "assets") in missing
    assert Path(found["paths"]["catalog.json"]).is_relative_to(contents)


@pytest.mark.parametrize("name", ["", "../pyproject.toml", "/etc/passwd", "icon/../../README.md"])
def test_bad_resource_names_are_rejected(name):
    with pytest.raises(ValueError, match="resource name"):
        resource_path(name)


def test_missing_resource_names_the_folder():
    with pytest.raises(FileNotFoundError, match="no-such-file.json") as err:
        resource_path("no-such-file.json")
    assert str(RESOURCES) in str(err.value)


# --- command line ---------------------------------------------------------------------------


def test_python_m_app_version():
    done = subprocess.run(
        [sys.executable, "-m", "specchat", "--version"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"SpecChat {pyproject_version()}\n"


def test_launcher_passes_arguments_to_the_cli_and_drops_psn(monkeypatch, capsys):
    launcher = load_packaging_module("specchat_launcher")
    assert launcher.user_args(["-psn_0_12345", "--version"]) == ["--version"]
    monkeypatch.setattr(sys, "argv", ["SpecChat", "-psn_0_1", "--version"])
    monkeypatch.setattr(sys, "path", list(sys.path))  # main() prepends the checkout root
    with pytest.raises(SystemExit) as exited:
        launcher.main()
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"SpecChat {pyproject_version()}\n"


def test_launcher_self_test_passes_from_the_checkout(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run(
        [sys.executable, str(PACKAGING / "specchat_launcher.py"), "--self-test"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:-1]] == [
        "ok   resources",
        "ok   mlx",
        "ok   model_modules",
        "ok   tokenizers",
        "ok   qt",
        "ok   metadata",
    ]
    assert lines[-1] == "self-test passed"


# --- icon -----------------------------------------------------------------------------------


def test_source_icon_is_a_square_png_with_transparent_corners():
    from PIL import Image

    with Image.open(RESOURCES / "icon" / "specchat.png") as im:
        assert (im.format, im.size, im.mode) == ("PNG", (1024, 1024), "RGBA")
        assert im.getpixel((0, 0))[3] == 0 and im.getpixel((512, 512))[3] == 255


def test_icns_built_with_pillow_holds_every_size(tmp_path):
    from PIL.IcnsImagePlugin import IcnsFile

    build_icon = load_packaging_module("build_icon")
    output = tmp_path / "SpecChat.icns"
    assert build_icon.build_icns(output=output, method="pillow") == "pillow"
    with open(output, "rb") as f:
        icns = IcnsFile(f)
        sizes = set(icns.itersizes())
        assert {(16, 16, 2), (32, 32, 2), (128, 128, 1), (256, 256, 2), (512, 512, 1), (512, 512, 2)} <= sizes
        assert icns.getimage((512, 512, 2)).size == (1024, 1024)
    assert len(build_icon.iconset_files()) == 10
    assert build_icon.iconset_files()["icon_512x512@2x.png"] == 1024


def test_icon_build_rejects_a_bad_source(tmp_path):
    from PIL import Image

    build_icon = load_packaging_module("build_icon")
    source = tmp_path / "wide.png"
    Image.new("RGBA", (1024, 512)).save(source)
    with pytest.raises(SystemExit, match="square PNG"):
        build_icon.build_icns(source, tmp_path / "x.icns", "pillow")
    with pytest.raises(SystemExit, match="does not exist"):
        build_icon.build_icns(tmp_path / "none.png", tmp_path / "x.icns", "pillow")


# --- build script ---------------------------------------------------------------------------


def run_build_script(tmp_path: Path, fake_uname: tuple[str, str] | None, **env_vars: str):
    """Run a copy of build_macos.sh (so a stray `cd ..` stays in tmp_path), optionally faking uname."""
    (tmp_path / "packaging").mkdir(exist_ok=True)
    script = tmp_path / "packaging" / "build_macos.sh"
    shutil.copy(PACKAGING / "build_macos.sh", script)
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "SPECCHAT_SIGN_IDENTITY",
            "SPECCHAT_NOTARY_PROFILE",
            "APPLE_ID",
            "APPLE_TEAM_ID",
            "APPLE_APP_SPECIFIC_PASSWORD",
        )
    }
    if fake_uname:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir(exist_ok=True)
        (bin_dir / "uname").write_text(f'#!/bin/sh\n[ "$1" = "-m" ] && echo {fake_uname[1]} || echo {fake_uname[0]}\n')
        (bin_dir / "uname").chmod(0o755)
        env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env.update(env_vars)
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(sys.platform == "darwin", reason="checks the refusal on other systems")
def test_build_script_stops_off_macos(tmp_path):
    done = run_build_script(tmp_path, None)
    assert done.returncode == 1
    assert "can only be built on macOS" in done.stderr and "Nothing was built" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["packaging"]


def test_build_script_wants_all_three_apple_id_variables(tmp_path):
    done = run_build_script(
        tmp_path,
        ("Darwin", "arm64"),
        APPLE_ID="me@example.com",
        SPECCHAT_SIGN_IDENTITY="Developer ID Application: Me (TEAM)",
    )
    assert done.returncode == 1
    assert "APPLE_TEAM_ID is not set" in done.stderr


def test_build_script_will_not_notarize_an_ad_hoc_signature(tmp_path):
    done = run_build_script(tmp_path, ("Darwin", "arm64"), SPECCHAT_NOTARY_PROFILE="specchat")
    assert done.returncode == 1
    assert "set SPECCHAT_SIGN_IDENTITY" in done.stderr


def test_build_script_refuses_intel_macs(tmp_path):
    done = run_build_script(tmp_path, ("Darwin", "x86_64"))
    assert done.returncode == 1 and "Apple silicon" in done.stderr
