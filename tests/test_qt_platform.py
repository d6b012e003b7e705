"""A Qt platform plugin that cannot load gives one line with a hint, not Qt's abort."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from specchat.qt_platform import debian_package, missing_libraries, platform_hint, platform_problem

REPO_ROOT = Path(__file__).resolve().parent.parent
# Recorded on Debian 12 with PySide6 6.11.3: ldd of the xcb plugin and of libQt6XcbQpa, and Qt's own message,
# with the named libraries hidden (an overlay mount in a private mount namespace) and then with none hidden.
RECORDED = Path(__file__).resolve().parent / "data" / "qt_platform"
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


def recorded(name: str) -> str:
    return (RECORDED / name).read_text()


def recorded_ldd(case: str, asked: list[str] | None = None):
    """An ldd runner answering with the outputs recorded for this case, by file name."""

    def ldd(cmd, **kwargs):
        name = Path(cmd[-1]).name
        if asked is not None:
            asked.append(name)
        library = "libqxcb" if name.startswith("libqxcb") else "libQt6XcbQpa"
        return subprocess.CompletedProcess(cmd, 0, recorded(f"ldd_{library}_{case}.txt"), "")

    return ldd


def qt_aborts(output: str):
    return lambda cmd, **kwargs: subprocess.CompletedProcess(cmd, -6, "", output)


@linux_only
def test_the_xcb_hint_names_the_packages_ldd_finds_missing(monkeypatch):
    asked: list[str] = []
    problem = platform_problem(
        {"DISPLAY": ":0"},
        run=qt_aborts(recorded("qt_xcb_icccm_keysyms_missing.txt")),  # Qt itself blames libxcb-cursor0
        ldd=recorded_ldd("icccm_keysyms_missing", asked),
    )
    assert problem == (
        "Qt could not load its platform plugin 'xcb': on Debian/Ubuntu install libxcb-icccm4 libxcb-keysyms1 "
        "(apt-get install libxcb-icccm4 libxcb-keysyms1); or set QT_QPA_PLATFORM=offscreen for a headless run"
    )
    assert asked == ["libqxcb.so", "libQt6XcbQpa.so.6"]  # the plugin and the library it links, found on disk


@linux_only
def test_every_missing_library_is_named_once_by_its_package():
    problem = platform_problem(
        {}, run=qt_aborts(QT_XCB_MISSING_CURSOR), ldd=recorded_ldd("cursor_xkb_renderutil_missing")
    )
    assert "install libxkbcommon-x11-0 libxcb-cursor0 libxcb-render-util0 (apt-get install " in problem


@linux_only
@pytest.mark.parametrize(
    "ldd",
    [
        recorded_ldd("none_missing"),  # ldd finds nothing missing: Qt's own suspect
        lambda cmd, **kwargs: subprocess.CompletedProcess(cmd, 1, "", "ldd: not a dynamic executable"),
    ],
    ids=["nothing-missing", "ldd-fails"],
)
def test_the_xcb_hint_falls_back_to_libxcb_cursor0(ldd):
    assert platform_problem({}, run=qt_aborts(QT_XCB_MISSING_CURSOR), ldd=ldd) == platform_hint(QT_XCB_MISSING_CURSOR)


@linux_only
def test_the_xcb_hint_falls_back_without_ldd():
    def no_ldd(cmd, **kwargs):
        raise FileNotFoundError(2, "No such file or directory", "ldd")

    assert "install libxcb-cursor0 (apt-get install libxcb-cursor0)" in platform_problem(
        {}, run=qt_aborts(QT_XCB_MISSING_CURSOR), ldd=no_ldd
    )


@linux_only
@pytest.mark.parametrize(
    "env, output",
    [
        ({"QT_QPA_PLATFORM": "nosuchplugin"}, 'Could not find the Qt platform plugin "nosuchplugin" in ""'),
        ({"DISPLAY": ":9"}, "qt.qpa.xcb: could not connect to display :9\n" + QT_XCB_MISSING_CURSOR),
    ],
    ids=["other-plugin", "no-display"],
)
def test_ldd_runs_only_when_xcb_lacks_libraries(env, output):
    assert platform_problem(env, run=qt_aborts(output), ldd=probe_must_not_run) is not None


def test_ldd_listings_give_the_libraries_not_found():
    assert missing_libraries(recorded("ldd_libqxcb_icccm_keysyms_missing.txt")) == [
        "libxcb-icccm.so.4",
        "libxcb-keysyms.so.1",
    ]  # listed twice by ldd (the plugin needs them directly and through libQt6XcbQpa), named once
    assert missing_libraries(recorded("ldd_libQt6XcbQpa_none_missing.txt")) == []


@pytest.mark.parametrize(
    "library, package",
    [
        ("libxcb-cursor.so.0", "libxcb-cursor0"),
        ("libxcb-icccm.so.4", "libxcb-icccm4"),
        ("libxcb-keysyms.so.1", "libxcb-keysyms1"),
        ("libxkbcommon-x11.so.0", "libxkbcommon-x11-0"),
        ("libxcb-xkb.so.1", "libxcb-xkb1"),
        ("libxcb-render-util.so.0", "libxcb-render-util0"),
        ("libxcb-image.so.0", "libxcb-image0"),
        ("libxcb-randr.so.0", "libxcb-randr0"),
        ("libxcb-shape.so.0", "libxcb-shape0"),
        ("libxcb-util.so.1", "libxcb-util1"),
        ("libX11-xcb.so.1", "libx11-xcb1"),
        ("libX11.so.6", "libx11-6"),
        ("libGL.so.1", "libgl1"),
        ("libEGL.so.1", "libegl1"),
        ("libfontconfig.so.1", "libfontconfig1"),
        ("libdbus-1.so.3", "libdbus-1-3"),
        ("libgcc_s.so.1", "libgcc-s1"),
        ("libglib-2.0.so.0", "libglib2.0-0"),
        ("libz.so.1", "zlib1g"),
        ("libGLdispatch.so.0", "libglvnd0"),
    ],
)
def test_a_library_maps_to_its_debian_package(library, package):
    assert debian_package(library) == package


@linux_only
def test_the_xcb_files_are_found_without_importing_qt():
    code = (
        "import sys\nfrom specchat.qt_platform import xcb_files\n"
        "print(*(f.name for f in xcb_files()))\nprint('PySide6' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["libqxcb.so libQt6XcbQpa.so.6", "False"]
