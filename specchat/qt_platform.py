"""Before the GUI starts on Linux: can Qt load its platform plugin here?

When it cannot (xcb without some libxcb-* library, no display, a misspelt QT_QPA_PLATFORM), Qt aborts
the whole process from C++ while creating the QApplication, which no Python code can catch. So a
short-lived child process creates one first, and its failure becomes a one-line hint. No Qt import
happens in this process.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

PROBE_CODE = "import sys\nfrom PySide6.QtWidgets import QApplication\nQApplication(sys.argv[:1])\n"
PROBE_TIMEOUT_S = 30.0
LDD_TIMEOUT_S = 10.0
ALWAYS_LOADS = ("offscreen", "minimal")  # built into every PySide6 wheel, need no system libraries
HEADLESS_HINT = "or set QT_QPA_PLATFORM=offscreen for a headless run"
# Qt >= 6.5 names libxcb-cursor0 whatever xcb library is missing, so it is only the fallback.
FALLBACK_PACKAGES = ("libxcb-cursor0",)
XCB_FILES = ("Qt/plugins/platforms/libqxcb.so", "Qt/lib/libQt6XcbQpa.so*")
# Debian/Ubuntu packages whose name does not follow from the library's (see debian_package).
PACKAGE_OF = {
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libgobject-2.0.so.0": "libglib2.0-0",
    "libgio-2.0.so.0": "libglib2.0-0",
    "libz.so.1": "zlib1g",
    "libGLdispatch.so.0": "libglvnd0",
    "libbrotlidec.so.1": "libbrotli1",
    "libbrotlicommon.so.1": "libbrotli1",
    "libc.so.6": "libc6",
    "libm.so.6": "libc6",
    "libdl.so.2": "libc6",
    "libpthread.so.0": "libc6",
    "librt.so.1": "libc6",
}
_PLUGIN = re.compile(r'platform plugin "([^"]*)"')
_AVAILABLE = re.compile(r"Available platform plugins are: ([^\n]*?)\.?\s*$", re.MULTILINE)
_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found\s*$", re.MULTILINE)
_SONAME = re.compile(r"lib(?P<name>.+)\.so\.(?P<major>\d+)(?:\.[\d.]*)?")

Runner = Callable[..., subprocess.CompletedProcess]


def platform_problem(
    env: Mapping[str, str] | None = None, run: Runner = subprocess.run, ldd: Runner = subprocess.run
) -> str | None:
    """None when Qt can start here (or the check does not apply), else one line saying what to do."""
    env = dict(os.environ if env is None else env)
    requested = env.get("QT_QPA_PLATFORM", "").strip()
    if not sys.platform.startswith("linux") or requested.split(":")[0] in ALWAYS_LOADS:
        return None
    try:
        done = run([sys.executable, "-c", PROBE_CODE], env=env, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except (subprocess.TimeoutExpired, OSError):
        return None  # slow or unstartable is not a plugin failure: let the app itself try
    output = f"{done.stdout}\n{done.stderr}"
    if done.returncode == 0 or "platform plugin" not in output:
        return None  # e.g. PySide6 missing: the app's own start-up reports that
    packages = missing_packages(xcb_files(), env, ldd) if lacks_libraries(output, requested) else []
    return platform_hint(output, requested, env.get("DISPLAY"), packages)


def plugin_name(qt_output: str, requested: str = "") -> str:
    """The platform plugin Qt could not load: the one its message names, else the requested one (xcb by default)."""
    found = _PLUGIN.search(qt_output)
    return found.group(1) if found else (requested.split(":")[0] or "xcb")


def lacks_libraries(qt_output: str, requested: str = "") -> bool:
    """True when xcb failed for another reason than the display, i.e. system libraries are likely missing."""
    return plugin_name(qt_output, requested) == "xcb" and "could not connect to display" not in qt_output


def platform_hint(qt_output: str, requested: str = "", display: str | None = None, packages: Sequence[str] = ()) -> str:
    """One line naming the plugin Qt could not load and how to fix it, from Qt's own messages.

    packages: the Debian/Ubuntu packages ldd found missing for xcb (empty: Qt's usual suspect).
    """
    plugin = plugin_name(qt_output, requested)
    start = f"Qt could not load its platform plugin '{plugin}'"
    if plugin == "xcb" and "could not connect to display" in qt_output:
        return (
            f"{start}: no X display could be opened (DISPLAY is {display or 'not set'}); "
            f"run it in a desktop session, {HEADLESS_HINT}"
        )
    if plugin == "xcb":
        names = " ".join(packages or FALLBACK_PACKAGES)
        return f"{start}: on Debian/Ubuntu install {names} (apt-get install {names}); {HEADLESS_HINT}"
    available = _AVAILABLE.search(qt_output)
    choices = f" (this Qt has: {available.group(1).strip()})" if available else ""
    return f"{start}: check QT_QPA_PLATFORM{choices}; {HEADLESS_HINT}"


def xcb_files() -> list[Path]:
    """Qt's xcb platform plugin and the libQt6XcbQpa it links, found without importing PySide6."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return []
    root = Path(next(iter(spec.submodule_search_locations)))
    found = (path.resolve() for pattern in XCB_FILES for path in sorted(root.glob(pattern)) if path.is_file())
    return list(dict.fromkeys(found))


def missing_packages(
    files: Iterable[Path], env: Mapping[str, str] | None = None, ldd: Runner = subprocess.run
) -> list[str]:
    """The packages to install for the libraries ldd reports "not found" for these files, in order, once each."""
    packages: dict[str, None] = {}
    for path in files:
        for library in missing_libraries(ldd_output(path, env, ldd)):
            packages.setdefault(debian_package(library))
    return list(packages)


def ldd_output(path: Path, env: Mapping[str, str] | None = None, ldd: Runner = subprocess.run) -> str:
    """What `ldd path` prints, or "" when ldd is missing, fails or hangs."""
    try:
        done = ldd(["ldd", str(path)], env=env, capture_output=True, text=True, timeout=LDD_TIMEOUT_S)
    except (subprocess.TimeoutExpired, OSError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def missing_libraries(ldd_text: str) -> list[str]:
    """The libraries an ldd listing marks "=> not found", in order, once each."""
    return list(dict.fromkeys(_NOT_FOUND.findall(ldd_text)))


def debian_package(library: str) -> str:
    """The Debian/Ubuntu package of a shared library: libNAME.so.N is libNAMEN (libNAME-N after a digit)."""
    if library in PACKAGE_OF:
        return PACKAGE_OF[library]
    soname = _SONAME.fullmatch(library)
    if soname is None:
        return library  # not a versioned library name: say what ldd said
    name = soname["name"].lower().replace("_", "-")
    return f"lib{name}{'-' if name[-1].isdigit() else ''}{soname['major']}"
