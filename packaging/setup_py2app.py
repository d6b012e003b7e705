"""py2app configuration for SpecChat.app. Build with packaging/build_macos.sh (macOS only).

`python packaging/setup_py2app.py py2app` builds the bundle on macOS. Importing this file never
imports py2app or setuptools, so the options can be loaded and checked anywhere (tests do, on Linux).
"""

from __future__ import annotations

import datetime
import importlib.metadata
import importlib.util
import os
import sys
import tomllib
from pathlib import Path

PACKAGING_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGING_DIR.parent
PYPROJECT = REPO_ROOT / "pyproject.toml"
ASSETS_DIR = REPO_ROOT / "specchat" / "assets"  # package data of `specchat`, copied with the package
LAUNCHER = PACKAGING_DIR / "specchat_launcher.py"
ICON_SOURCE = ASSETS_DIR / "icon" / "specchat.png"
ICNS_FILE = REPO_ROOT / "build" / "icon" / "SpecChat.icns"
BUILD_DIR = REPO_ROOT / "build" / "py2app"
DIST_DIR = REPO_ROOT / "dist"

APP_NAME = "SpecChat"
BUNDLE_IDENTIFIER = "app.specchat.SpecChat"
# mlx >= 0.30 ships macOS wheels for 14.0 and later only (mlx-lm 0.32 needs mlx >= 0.32.2).
MINIMUM_MACOS = "14.0"

# Imported lazily or from C, so py2app's import scan misses parts of them: copied whole.
PACKAGES = [
    "specchat",  # subcommands imported by name (specchat/cli.py); specchat/assets comes along
    "mlx_lm",  # mlx_lm.models.<model_type> is imported by name when a model loads
    "optiq",
    "PySide6",  # Qt libraries and plugins live inside the package
    "shiboken6",
    "pyqtgraph",  # picks its Qt binding and loads colormaps/icons at run time
    "huggingface_hub",  # lazy module attributes
    "transformers",  # lazy module attributes, tokenizer classes looked up by name
    "tokenizers",
    "safetensors",
    "jinja2",  # chat templates
    "platformdirs",  # the platform module is chosen at run time
    "psutil",
    "pygments",  # lexers and styles are looked up by name
]
# PEP 420 namespace packages (no __init__.py): py2app's `packages` option cannot locate them, so
# they are copied as folders into Contents/Resources/lib/pythonX.Y (on sys.path in the bundle).
# mlx's native library must stay next to mlx.metallib: MLX finds its Metal kernels beside libmlx.
NAMESPACE_PACKAGES = {"mlx": ("mlx", "mlx-metal")}  # import name -> distributions (for metadata)
INCLUDES = ["mlx_lm.models.*"]  # scan every model module for the imports it needs
EXCLUDES = [
    "tests",
    "pytest",
    "_pytest",
    "pytestqt",
    "importlinter",  # no test code in the app
    "mlx",  # copied as a folder instead (see NAMESPACE_PACKAGES)
    "tkinter",
    "PyQt5",
    "PyQt6",
    "PySide2",  # other GUI toolkits pyqtgraph could use
    "torch",
    "tensorflow",
    "jax",
    "flax",  # optional transformers backends
]
QT_PLUGINS = ["platforms/libqcocoa.dylib", "styles", "imageformats", "iconengines"]


def project_version(pyproject: Path = PYPROJECT) -> str:
    """The version in pyproject.toml's [project] table."""
    with open(pyproject, "rb") as f:
        return tomllib.load(f)["project"]["version"]


def info_plist(version: str) -> dict:
    """Info.plist keys; py2app fills in the rest (executable, icon file, Python runtime)."""
    return {
        "CFBundleName": APP_NAME,
        "CFBundleDisplayName": APP_NAME,
        "CFBundleIdentifier": BUNDLE_IDENTIFIER,
        "CFBundleShortVersionString": version,
        "CFBundleVersion": version,
        "CFBundleDevelopmentRegion": "en",
        "LSMinimumSystemVersion": MINIMUM_MACOS,
        "LSArchitecturePriority": ["arm64"],
        "LSRequiresNativeExecution": True,  # MLX needs Apple silicon; never run under Rosetta
        "LSApplicationCategoryType": "public.app-category.developer-tools",
        "NSHighResolutionCapable": True,
        "NSRequiresAquaSystemAppearance": False,  # follow Dark Mode
        "NSHumanReadableCopyright": f"Copyright © {datetime.date.today().year} SpecChat contributors. MIT License.",
    }


def site_lib_dir() -> str:
    """Where py2app puts copied packages, relative to Contents/Resources."""
    return f"lib/python{sys.version_info.major}.{sys.version_info.minor}"


def namespace_package_dirs(name: str) -> list[Path]:
    """Every folder of the installed namespace package `name`; a clear error when it is missing."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(
            f"{name} is not installed in this Python ({sys.executable}); "
            "install the project first: pip install '.[macos-build]'"
        )
    return [Path(p) for p in spec.submodule_search_locations]


def dist_info_dir(distribution: str) -> Path | None:
    """The installed .dist-info folder of `distribution`, or None when it is not installed."""
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in dist.files or ():
        if file.parts and file.parts[0].endswith(".dist-info"):
            return Path(dist.locate_file(file.parts[0]))
    return None


def bundle_package_dir(name: str) -> str:
    """Where py2app copies a package of PACKAGES (whole, data files too), relative to Contents/Resources."""
    return f"{site_lib_dir()}/{name}"


def data_files() -> list[tuple[str, list[str]]]:
    """Namespace packages and their metadata, copied into the bundle's site folder."""
    copied: list[str] = []
    for name, distributions in NAMESPACE_PACKAGES.items():
        copied += [str(d) for d in namespace_package_dirs(name)]
        copied += [str(d) for d in map(dist_info_dir, distributions) if d is not None]
    return [(site_lib_dir(), copied)]


def py2app_options(version: str | None = None) -> dict:
    """The options of the `py2app` command."""
    return {
        "plist": info_plist(version or project_version()),
        "iconfile": str(ICNS_FILE),
        "packages": list(PACKAGES),
        "includes": list(INCLUDES),
        "excludes": list(EXCLUDES),
        "qt_plugins": list(QT_PLUGINS),
        "arch": "arm64",
        "argv_emulation": False,  # conflicts with Qt's own event handling
        "site_packages": False,
        "optimize": 0,  # keep docstrings: transformers reads them at import time
        "bdist_base": str(BUILD_DIR),
        "dist_dir": str(DIST_DIR),
    }


def setup_kwargs() -> dict:
    """Everything passed to setuptools.setup() for the py2app build."""
    version = project_version()
    return {
        "name": APP_NAME,
        "version": version,
        "app": [str(LAUNCHER)],
        "data_files": data_files(),
        "options": {"py2app": py2app_options(version)},
    }


def main() -> None:
    """Build the bundle (macOS only): `python packaging/setup_py2app.py py2app`."""
    if sys.platform != "darwin":
        raise SystemExit(f"SpecChat.app can only be built on macOS (py2app needs macOS); this is {sys.platform}.")
    sys.path.insert(0, str(PACKAGING_DIR))
    import build_icon

    if not ICNS_FILE.exists() or ICNS_FILE.stat().st_mtime < ICON_SOURCE.stat().st_mtime:
        build_icon.build_icns(ICON_SOURCE, ICNS_FILE)
    kwargs = setup_kwargs()
    # setuptools reads ./pyproject.toml and would pass its dependencies as install_requires,
    # which py2app >= 0.28.9 rejects; so run from this folder, where there is none.
    os.chdir(PACKAGING_DIR)
    from setuptools import setup

    setup(**kwargs)


if __name__ == "__main__":
    main()
