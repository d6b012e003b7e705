"""Read-only files shipped with the app (icon, model catalog, ...), found from a checkout or a .app bundle.

From a source checkout they live in `<repo>/resources/`. Inside the py2app bundle the whole folder
is copied to `SpecChat.app/Contents/Resources/resources/`: py2app's bootstrap sets
`sys.frozen = "macosx_app"` and the environment variable RESOURCEPATH to `Contents/Resources`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path, PurePosixPath

RESOURCES_DIRNAME = "resources"
PY2APP_FROZEN = "macosx_app"
SOURCE_RESOURCES_DIR = Path(__file__).resolve().parent.parent / RESOURCES_DIRNAME


def running_in_bundle() -> bool:
    """True inside the py2app-built SpecChat.app."""
    return getattr(sys, "frozen", None) == PY2APP_FROZEN


def bundle_resources_dir() -> Path:
    """`Contents/Resources/resources` of the running bundle."""
    contents_resources = os.environ.get("RESOURCEPATH", "").strip()
    if contents_resources:
        return Path(contents_resources) / RESOURCES_DIRNAME
    # py2app always sets RESOURCEPATH; Contents/MacOS/<exe> -> Contents/Resources is the fallback.
    return Path(sys.executable).resolve().parent.parent / "Resources" / RESOURCES_DIRNAME


def resources_dir() -> Path:
    """The folder holding the app's resources: inside the bundle when frozen, else the checkout's."""
    return bundle_resources_dir() if running_in_bundle() else SOURCE_RESOURCES_DIR


def resource_path(name: str) -> Path:
    """Absolute path of the resource `name` (e.g. "catalog.json", "icon/specchat.png"); it must exist."""
    relative = _checked_relative_name(name)
    root = resources_dir()
    path = root.joinpath(*relative.parts)
    if not path.exists():
        where = "app bundle" if running_in_bundle() else "source checkout"
        raise FileNotFoundError(f"SpecChat resource {name!r} is missing: looked for {path} ({where})")
    return path


def _checked_relative_name(name: str) -> PurePosixPath:
    """`name` as a relative path that stays inside the resources folder, or ValueError."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"resource name must be a non-empty string, got {name!r}")
    relative = PurePosixPath(name.replace("\\", "/"))
    if relative.is_absolute() or ".." in relative.parts:
        raise ValueError(f"resource name must be relative to the resources folder, got {name!r}")
    return relative
