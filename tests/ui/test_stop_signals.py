"""Ctrl-C or SIGTERM in the terminal that runs the app closes it as the window's close button does."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_closes_the_window_cleanly(stop, tmp_path, dense_target):
    home = tmp_path / "home"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "SPECCHAT_HOME": str(home)}
    app = subprocess.Popen(
        [sys.executable, "-m", "specchat", "--target", str(dense_target)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    database = home / "data" / "conversations.sqlite3"  # made while the window is built, after the handlers
    deadline = time.monotonic() + 120
    while not database.exists() and app.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert database.exists(), app.communicate(timeout=30)
    app.send_signal(stop)
    out, err = app.communicate(timeout=90)
    assert app.returncode == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert (home / "config" / "settings.json").exists()  # the close path ran: the window saved its settings
