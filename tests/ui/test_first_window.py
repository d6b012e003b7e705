"""The first window shows before the heavy imports, and the main window takes its place once built."""

import base64
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QByteArray, QRect, QTimer
from PySide6.QtWidgets import QApplication, QMainWindow

import specchat.ui.app as app_module
from specchat.ui import theme
from specchat.ui.first_window import MARK_ENV, FirstWindow, saved_look
from specchat.ui.theme_switch import switch

ROOT = Path(__file__).resolve().parents[2]
GIVE_UP_MS = 300_000  # a bound on run_app in these tests, never reached when they pass


@pytest.mark.slow
def test_the_first_window_is_painted_before_any_heavy_import(tmp_path):
    home = tmp_path / "home"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "SPECCHAT_HOME": str(home), MARK_ENV: "1"}
    app = subprocess.Popen(
        [sys.executable, "-m", "specchat"], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    guard = threading.Timer(300, app.kill)  # a hung start fails the test instead of the run
    guard.start()
    assert app.stderr is not None
    marks = []
    for line in app.stderr:
        if line.startswith("specchat-mark "):
            marks.append(line.split())
            if marks[-1][1] == "main-window-shown":
                break
    app.send_signal(signal.SIGTERM)
    app.communicate(timeout=120)
    guard.cancel()
    assert [mark[1] for mark in marks] == ["first-window", "main-window-shown"], marks
    assert marks[0][3] == "heavy=none"  # no MLX, mlx-lm, transformers, pyqtgraph, FastAPI or engine yet
    assert "mlx_lm" in marks[1][3] and "pyqtgraph" in marks[1][3]  # the main window's, imported after
    assert float(marks[0][2]) < float(marks[1][2])
    assert app.returncode == 0
    assert (home / "config" / "settings.json").exists()  # the main window's close path ran


class RecordedStartup(app_module.Startup):
    """Startup, remembered by the test; close_first: its first window closed as soon as it is shown."""

    made: list["RecordedStartup"] = []
    close_first = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        RecordedStartup.made.append(self)
        # where the first window was shown: the main window may replace it before a 20 ms look sees it
        self.first_geometry = self.first.geometry() if self.first is not None and self.first.isVisible() else None
        if self.close_first and self.first is not None:
            self.first.close()  # as a stop signal's closeAllWindows, before any import step


def run_app_watching(paths, monkeypatch, look=None, close_first=False) -> int:
    """run_app, with look(startup) called every 20 ms on the GUI thread until it returns True."""
    monkeypatch.setattr(RecordedStartup, "made", [])
    monkeypatch.setattr(RecordedStartup, "close_first", close_first)
    monkeypatch.setattr(app_module, "Startup", RecordedStartup)
    timer = QTimer(interval=20)
    give_up = QTimer(singleShot=True, interval=GIVE_UP_MS)

    def tick() -> None:
        if not RecordedStartup.made or look is None:
            return
        try:
            done = look(RecordedStartup.made[0])
        except BaseException:
            timer.stop()
            QApplication.exit(4)
            raise
        if done:
            timer.stop()

    timer.timeout.connect(tick)
    give_up.timeout.connect(lambda: QApplication.exit(3))
    timer.start()
    give_up.start()
    try:
        return app_module.run_app(paths=paths)
    finally:
        timer.stop()
        give_up.stop()


def test_the_main_window_takes_the_first_windows_place(qtbot, paths, monkeypatch):
    seen: list[QRect] = []

    def look(start) -> bool:
        if start.window is None:
            return False
        assert start.first_geometry is not None  # the first window was shown
        seen.append(start.first_geometry)
        seen.append(start.window.geometry())
        seen.append(QRect(seen[0].topLeft(), seen[0].size().expandedTo(start.window.minimumSizeHint())))
        assert start.first is None and start.window.isVisible()
        assert not any(isinstance(w, FirstWindow) and w.isVisible() for w in QApplication.topLevelWidgets())
        start.window.close()
        return True

    assert run_app_watching(paths, monkeypatch, look) == 0
    # the first window was shown, then the main one in its place (no smaller than the main window's minimum)
    assert len(seen) == 3 and seen[1] == seen[2]
    assert paths.settings_file.exists()  # closed as the close button does


def test_closing_the_first_window_ends_the_app_without_building_the_main_one(qtbot, paths, monkeypatch):
    built = []
    monkeypatch.setattr(app_module, "MainWindow", lambda *args, **kwargs: built.append(args))
    assert run_app_watching(paths, monkeypatch, close_first=True) == 0
    assert RecordedStartup.made[0].window is None and built == []
    assert not paths.settings_file.exists()


def test_the_first_window_uses_the_saved_theme_and_place(qtbot, paths):
    placed = QMainWindow()
    qtbot.addWidget(placed)
    placed.setGeometry(QRect(40, 60, 900, 600))
    geometry = base64.b64encode(placed.saveGeometry().data()).decode("ascii")
    paths.ensure()
    paths.settings_file.write_text(json.dumps({"theme": "dark", "window_geometry": geometry}))
    try:
        first = FirstWindow(paths)
        qtbot.addWidget(first)
        assert theme.is_dark()
        expected = QMainWindow()
        qtbot.addWidget(expected)
        expected.restoreGeometry(QByteArray(base64.b64decode(geometry)))
        assert first.geometry() == expected.geometry()
    finally:
        switch().set_choice("light")


def test_a_bad_settings_file_is_left_for_the_main_window_to_report(qtbot, paths):
    paths.ensure()
    paths.settings_file.write_bytes(b'{"theme": "dark", oops')
    before = sorted(paths.config_dir.iterdir())
    assert saved_look(paths) == {}
    first = FirstWindow(paths)
    qtbot.addWidget(first)
    assert sorted(paths.config_dir.iterdir()) == before  # not set aside: the main window does, and says so
    assert paths.settings_file.read_bytes() == b'{"theme": "dark", oops'


def test_only_well_formed_saved_values_are_used(paths):
    paths.ensure()
    paths.settings_file.write_text(json.dumps({"theme": "purple", "window_geometry": "not base64!"}))
    assert saved_look(paths) == {}
    paths.settings_file.write_text(json.dumps({"theme": "light", "window_geometry": "AAEC"}))
    assert saved_look(paths) == {"theme": "light", "window_geometry": "AAEC"}
