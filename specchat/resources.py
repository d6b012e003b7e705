"""Read-only files shipped inside the `specchat` package (model catalog, icon), read through importlib.resources.

They live in `specchat/assets/` and travel with the package: the wheel holds them as package data
(pyproject.toml), and py2app copies the whole `specchat` package, assets included, to
`SpecChat.app/Contents/Resources/lib/pythonX.Y/specchat/`. Nothing here looks beside the source tree,
so a checkout, a non-editable install and the bundle all read the same way.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.resources
from collections.abc import Iterator
from importlib.resources.abc import Traversable
from pathlib import Path, PurePosixPath

PACKAGE = "specchat"
ASSETS_DIRNAME = "assets"
_extracted = contextlib.ExitStack()  # files copied out of a zipped package, removed at exit
atexit.register(_extracted.close)


def assets_root() -> Traversable:
    """The `assets` folder of the installed `specchat` package."""
    return importlib.resources.files(PACKAGE) / ASSETS_DIRNAME


def resource(name: str) -> Traversable:
    """The resource `name` (e.g. "catalog.json", "icon/specchat.png"); FileNotFoundError when absent."""
    relative = _checked_relative_name(name)
    found = assets_root().joinpath(*relative.parts)
    if not found.is_file():
        raise FileNotFoundError(
            f"SpecChat resource {name!r} is missing: looked for {found} "
            f"(the {PACKAGE!r} package's {ASSETS_DIRNAME}/ folder)"
        )
    return found


def read_text(name: str, encoding: str = "utf-8") -> str:
    """The text of the resource `name`."""
    return resource(name).read_text(encoding=encoding)


@contextlib.contextmanager
def as_file(name: str) -> Iterator[Path]:
    """A real file path for the resource `name` while the block runs (a temporary copy if zipped)."""
    with importlib.resources.as_file(resource(name)) as path:
        yield Path(path)


def resource_path(name: str) -> Path:
    """A real file path of the resource `name` for the rest of the process (e.g. for Qt)."""
    found = resource(name)
    if isinstance(found, Path):
        return found
    return Path(_extracted.enter_context(importlib.resources.as_file(found)))


def _checked_relative_name(name: str) -> PurePosixPath:
    """`name` as a relative path that stays inside the assets folder, or ValueError."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"resource name must be a non-empty string, got {name!r}")
    relative = PurePosixPath(name.replace("\\", "/"))
    if relative.is_absolute() or ".." in relative.parts:
        raise ValueError(f"resource name must be relative to the assets folder, got {name!r}")
    return relative
