"""Before the GUI starts on Linux: can Qt load its platform plugin here?

When it cannot (xcb without libxcb-cursor0, no display, a misspelt QT_QPA_PLATFORM), Qt aborts
the whole process from C++ while creating the QApplication, which no Python code can catch. So a
short-lived child process creates one first, and its failure becomes a one-line hint. No Qt import
happens in this process.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping

PROBE_CODE = "import sys\nfrom PySide6.QtWidgets import QApplication\nQApplication(sys.argv[:1])\n"
PROBE_TIMEOUT_S = 30.0
ALWAYS_LOADS = ("offscreen", "minimal")  # built into every PySide6 wheel, need no system libraries
HEADLESS_HINT = "or set QT_QPA_PLATFORM=offscreen for a headless run"
_PLUGIN = re.compile(r'platform plugin "([^"]*)"')
_AVAILABLE = re.compile(r"Available platform plugins are: ([^\n]*?)\.?\s*$", re.MULTILINE)

Runner = Callable[..., subprocess.CompletedProcess]


def platform_problem(env: Mapping[str, str] | None = None, run: Runner = subprocess.run) -> str | None:
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
    return platform_hint(output, requested, env.get("DISPLAY"))


def platform_hint(qt_output: str, requested: str = "", display: str | None = None) -> str:
    """One line naming the plugin Qt could not load and how to fix it, from Qt's own messages."""
    found = _PLUGIN.search(qt_output)
    plugin = found.group(1) if found else (requested.split(":")[0] or "xcb")
    start = f"Qt could not load its platform plugin '{plugin}'"
    if plugin == "xcb" and "could not connect to display" in qt_output:
        return (
            f"{start}: no X display could be opened (DISPLAY is {display or 'not set'}); "
            f"run it in a desktop session, {HEADLESS_HINT}"
        )
    if plugin == "xcb":
        return f"{start}: on Debian/Ubuntu install libxcb-cursor0 (apt-get install libxcb-cursor0); {HEADLESS_HINT}"
    available = _AVAILABLE.search(qt_output)
    choices = f" (this Qt has: {available.group(1).strip()})" if available else ""
    return f"{start}: check QT_QPA_PLATFORM{choices}; {HEADLESS_HINT}"
