"""A Qt platform plugin that cannot load gives one line with a hint, not Qt's abort."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from specchat.qt_platform import platform_hint, platform_problem

REPO_ROOT = Path(__file__).resolve().parent.parent
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the probe runs on Linux only")
# What Qt 6.11 printed on this machine for QT_QPA_PLATFORM unset and no libxcb-cursor0.
QT_XCB_MISSING_CURSOR = """qt.qpa.plugin: From 6.5.0, xcb-cursor0 or libxcb-cursor0 is needed to load the Qt xcb platform plugin.
qt.qpa.plugin: Could not load the Qt platform plugin "xcb" in "" even though it was found.
This application failed to start because no Qt platform plugin could be initialized.

Available platform plugins are: minimal, linuxfb, offscreen, xcb, wayland.
"""


def run_gui(**env_vars) -> subprocess.CompletedProcess:
    """`python -m specchat` (the GUI, no subcommand) with QT_QPA_PLATFORM and DISPLAY as given."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE")
    }
    env.update(env_vars)
    return subprocess.run(
        [sys.executable, "-m", "specchat"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )


@linux_only
def test_an_unknown_platform_plugin_gives_one_line(tmp_path):
    done = run_gui(QT_QPA_PLATFORM="nosuchplugin", SPECCHAT_HOME=str(tmp_path))
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        "error: Qt could not load its platform plugin 'nosuchplugin': check QT_QPA_PLATFORM (this Qt has: "
    )
    assert "offscreen" in lines[0] and lines[0].endswith("or set QT_QPA_PLATFORM=offscreen for a headless run")


@linux_only
def test_xcb_without_a_display_gives_one_line(tmp_path):
    done = run_gui(SPECCHAT_HOME=str(tmp_path))  # default plugin xcb, no DISPLAY: it cannot load
    assert done.returncode == 1 and "Aborted" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: Qt could not load its platform plugin 'xcb': ")
    assert line.endswith("or set QT_QPA_PLATFORM=offscreen for a headless run")


def test_the_xcb_hint_names_libxcb_cursor0():
    assert platform_hint(QT_XCB_MISSING_CURSOR) == (
        "Qt could not load its platform plugin 'xcb': on Debian/Ubuntu install libxcb-cursor0 "
        "(apt-get install libxcb-cursor0); or set QT_QPA_PLATFORM=offscreen for a headless run"
    )


def test_no_display_is_named():
    output = "qt.qpa.xcb: could not connect to display :9\n" + QT_XCB_MISSING_CURSOR.splitlines()[1]
    assert platform_hint(output, display=":9") == (
        "Qt could not load its platform plugin 'xcb': no X display could be opened (DISPLAY is :9); "
        "run it in a desktop session, or set QT_QPA_PLATFORM=offscreen for a headless run"
    )


def probe_must_not_run(*args, **kwargs):
    pytest.fail("the probe ran")


@pytest.mark.parametrize("platform", ["offscreen", "minimal", "offscreen:fontengine=freetype"])
def test_headless_platforms_are_not_probed(monkeypatch, platform):
    monkeypatch.setattr(sys, "platform", "linux")
    assert platform_problem({"QT_QPA_PLATFORM": platform}, run=probe_must_not_run) is None


def test_other_systems_are_not_probed(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert platform_problem({}, run=probe_must_not_run) is None


@pytest.mark.parametrize(
    "returncode, stderr",
    [
        (0, ""),  # Qt started
        (1, "ModuleNotFoundError: No module named 'PySide6'"),  # not a plugin failure: the app reports it
    ],
)
def test_only_a_plugin_failure_stops_the_start(monkeypatch, returncode, stderr):
    monkeypatch.setattr(sys, "platform", "linux")

    def run(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, returncode, "", stderr)

    assert platform_problem({}, run=run) is None
    aborted = lambda cmd, **kwargs: subprocess.CompletedProcess(cmd, -6, "", QT_XCB_MISSING_CURSOR)  # noqa: E731
    assert platform_problem({}, run=aborted).startswith("Qt could not load its platform plugin 'xcb'")
