"""How take_screenshots.py drives the real window: an X display with a window manager, a step generator
advanced from Qt's event loop, and grabs of the screen's pixels (title bars and pop-ups included)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
Wait = tuple[str, Callable[[], bool], float]  # what a step waits for, the test, the timeout in seconds
Steps = Iterator[Wait]


class Failure(Exception):
    """A step could not be done: the message says which."""


def free_display(first: int = 95) -> int:
    """The first X display number from first up with no socket or lock file."""
    n = first
    while Path(f"/tmp/.X11-unix/X{n}").exists() or Path(f"/tmp/.X{n}-lock").exists():
        n += 1
    return n


def wait_for(what: str, done: Callable[[], bool], timeout_s: float) -> None:
    """Poll done() (before Qt starts) until true; exit with a message after timeout_s."""
    end = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > end:
            sys.exit(f"take_screenshots: timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(0.05)


def start_display(screen: str) -> list[subprocess.Popen]:
    """Start Xvfb (screen "WxHxDEPTH") and openbox on a free display, point DISPLAY at it; the processes."""
    n = free_display()
    xvfb = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", screen, "-nolisten", "tcp"], stderr=subprocess.DEVNULL)
    wait_for(f"Xvfb on :{n}", lambda: Path(f"/tmp/.X11-unix/X{n}").exists() or xvfb.poll() is not None, 30)
    if xvfb.poll() is not None:
        sys.exit(f"take_screenshots: Xvfb :{n} did not start")
    os.environ["DISPLAY"] = f":{n}"
    wm = subprocess.Popen(["openbox"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for("openbox", window_manager_running, 30)
    return [wm, xvfb]


def window_manager_running() -> bool:
    """True once a window manager announces itself on the root window (EWMH)."""
    probe = subprocess.run(["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"], capture_output=True, text=True)
    return "window id" in probe.stdout


def until(what: str, done: Callable[[], bool], timeout_s: float) -> Wait:
    """What a step yields to wait (in Qt's event loop) until done() is true, failing after timeout_s."""
    return what, done, timeout_s


def settle(seconds: float) -> Steps:
    """Let the event loop paint, lay out and let the window manager place for a while."""
    end = time.monotonic() + seconds
    yield until("events", lambda: time.monotonic() >= end, seconds + 5)


def drive(app, steps: Steps) -> str | None:
    """Run app.exec() while a timer advances the steps generator past each wait it yields; the failure, if any."""
    from PySide6.QtCore import QTimer

    state: dict = {"wait": None, "error": None}

    def advance() -> None:
        try:
            if state["wait"] is not None:
                what, done, end = state["wait"]
                if not done():
                    if time.monotonic() > end:
                        raise Failure(f"timed out waiting for {what}")
                    return
            what, done, timeout_s = next(steps)
            state["wait"] = (what, done, time.monotonic() + timeout_s)
        except StopIteration:
            timer.stop()
            app.quit()
        except Failure as failure:
            state["error"] = str(failure)
            timer.stop()
            app.exit(1)

    timer = QTimer(interval=50)
    timer.timeout.connect(advance)
    timer.start()
    app.exec()
    return state["error"]


def grab(rect, path: Path) -> None:
    """Save the X root window's pixels inside rect (global coordinates, frame included) as path."""
    from PySide6.QtGui import QGuiApplication

    shot = QGuiApplication.primaryScreen().grabWindow(0, rect.x(), rect.y(), rect.width(), rect.height())
    if shot.isNull() or not shot.save(str(path), "PNG"):
        raise Failure(f"could not save {path}")
    print(f"wrote {path.relative_to(HERE.parents[1])} ({shot.width()}x{shot.height()})", flush=True)


def global_rect(widget, margin: int = 0):
    """A child widget's rectangle in screen coordinates, grown by margin on every side."""
    from PySide6.QtCore import QPoint, QRect

    rect = QRect(widget.mapToGlobal(QPoint(0, 0)), widget.size())
    return rect.adjusted(-margin, -margin, margin, margin)


def on_top(widget) -> Steps:
    """Raise and activate a top-level window, then wait until it is active and painted."""
    widget.show()
    widget.raise_()
    widget.activateWindow()
    yield until(f"{widget.windowTitle()} to be active", widget.isActiveWindow, 30)
    yield from settle(1.5)
