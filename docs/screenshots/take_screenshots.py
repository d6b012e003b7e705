"""Make the README screenshots from the real app window, in light and dark.

    . .venv/bin/activate && python docs/screenshots/take_screenshots.py

writes six PNGs beside this script: window-{light,dark}.png (a real reply with prompt-lookup tints and
the dashboard beside the chat), models-{light,dark}.png (the Models window) and
speculation-menu-{light,dark}.png (the Speculation menu opened from the menu bar).

It loads the real SmolLM2-135M-Instruct (MLX 4-bit) from MODEL (or $SPECCHAT_SCREENSHOT_MODEL) in a
MainWindow whose folders all live in a temporary folder, never the user's, and asks it to rewrite a
short function, so prompt lookup drafts the copied code. When DISPLAY is not set it starts
`Xvfb :95 -screen 0 1440x900x24` (the next free display if :95 is taken) and `openbox`, so the grabs
include the window manager's title bars; the hub is kept offline (HF_HUB_OFFLINE=1). On 2 busy CPU
cores it takes about a minute.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL = os.environ.get("SPECCHAT_SCREENSHOT_MODEL", "/work/shared/models/smollm2-135m-instruct-4bit")
SCREEN = "1440x900x24"
THEMES = ("light", "dark")
K = 4  # drafts per round: prompt lookup drafts the copied code four tokens at a time
MAX_TOKENS = 200
PROMPT = """Rewrite this Python function with type hints:

```python
def total_price(items, tax_rate):
    total = 0
    for item in items:
        total += item.price * item.quantity
    return total * (1 + tax_rate)
```"""
LOAD_S, REPLY_S, SCAN_S = 300, 600, 60  # generous upper bounds of the waits (2 CPU cores)


def free_display(first: int = 95) -> int:
    """The first X display number from first up with no socket or lock file."""
    n = first
    while Path(f"/tmp/.X11-unix/X{n}").exists() or Path(f"/tmp/.X{n}-lock").exists():
        n += 1
    return n


def wait_for(what: str, done, timeout_s: float) -> None:
    """Poll done() (before Qt starts) until true; exit with a message after timeout_s."""
    end = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > end:
            sys.exit(f"take_screenshots: timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(0.05)


def start_display() -> list[subprocess.Popen]:
    """Start Xvfb and openbox on a free display and point DISPLAY at it; the processes to stop later."""
    n = free_display()
    xvfb = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", SCREEN, "-nolisten", "tcp"], stderr=subprocess.DEVNULL)
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


class Failure(Exception):
    """A step could not be done: the message says which."""


def until(what: str, done, timeout_s: float) -> tuple:
    """What a step yields to wait (in Qt's event loop) until done() is true, failing after timeout_s."""
    return what, done, timeout_s


def settle(seconds: float):
    """Let the event loop paint, lay out and let the window manager place for a while."""
    end = time.monotonic() + seconds
    yield until("events", lambda: time.monotonic() >= end, seconds + 5)


def drive(app, steps) -> str | None:
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

    timer = QTimer(interval=50, timeout=advance)
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


def on_top(widget):
    """Raise and activate a top-level window, then wait until it is active and painted."""
    widget.show()
    widget.raise_()
    widget.activateWindow()
    yield until(f"{widget.windowTitle()} to be active", widget.isActiveWindow, 30)
    yield from settle(1.5)


def load_and_reply(window):
    """Wait for the model and the plain-decode measurement, choose prompt lookup at K, send PROMPT."""
    yield until("the model to load", lambda: window.pair is not None or window.banner.level == "error", LOAD_S)
    if window.pair is None:
        raise Failure(f"the model did not load: {window.banner.text.text()}")
    yield until("the plain-decode measurement", lambda: window.docks.measuring is None, LOAD_S)
    window.speculation.mode_actions["lookup"].trigger()  # as the menu item does: modeChosen -> _mode_chosen
    window.speculation.k_actions[K].trigger()
    window.panel.max_tokens.setValue(MAX_TOKENS)
    finished: list = []
    window.chat.replyFinished.connect(finished.append)
    window.composer.text.setPlainText(PROMPT)
    window.composer.send_button.click()
    yield until("the reply", lambda: bool(finished) or window.banner.level == "error", REPLY_S)
    if not finished:
        raise Failure(f"the reply failed: {window.banner.text.text()}")
    stats = finished[0].stats
    print(f"reply: {stats.generated_tokens} tokens, {stats.rounds} rounds, {stats.acceptance_rate:.0%} accepted")


def shoot_window(window, theme: str):
    """The main window with its title bar."""
    yield from on_top(window)
    grab(window.frameGeometry(), HERE / f"window-{theme}.png")


def shoot_menu(window, theme: str):
    """The Speculation menu as a click on the menu bar opens it, over the window."""
    yield from on_top(window)
    menu = window.speculation
    window.menuBar().setActiveAction(menu.menuAction())
    yield until("the Speculation menu", menu.isVisible, 10)
    yield from settle(1.0)
    grab(window.frameGeometry().united(menu.frameGeometry()), HERE / f"speculation-menu-{theme}.png")
    menu.close()
    yield from settle(0.5)


def shoot_models(window, theme: str):
    """The Models window once it has listed the local models and answered the search (offline)."""
    models = window.models.open()
    answers: list = []
    models.localScanned.connect(answers.append)
    models.searchFinished.connect(answers.append)
    yield until("the Models window's lists", lambda: len(answers) >= 2, SCAN_S)
    yield from on_top(models)
    grab(models.frameGeometry(), HERE / f"models-{theme}.png")
    window.models.close()
    yield from settle(0.5)


def steps(window):
    """One real reply, then every screenshot in each theme, then close the window."""
    window.preferences.apply({"theme": THEMES[0]})
    window.show()
    yield from load_and_reply(window)
    for theme in THEMES:
        window.preferences.apply({"theme": theme})  # as Preferences ▸ Appearance does
        yield from settle(1.0)
        yield from shoot_window(window, theme)
        yield from shoot_menu(window, theme)
        yield from shoot_models(window, theme)
    window.close()
    yield from settle(0.5)


def run(root: Path) -> str | None:
    """Build the app's window with every folder under root and drive it through the steps; the failure, if any."""
    from PySide6.QtGui import QCursor
    from PySide6.QtWidgets import QApplication

    from specchat.paths import AppPaths
    from specchat.ui.main_window import MainWindow

    app = QApplication([sys.argv[0]])
    app.setApplicationName("SpecChat")
    app.setOrganizationName("SpecChat")
    QCursor.setPos(app.primaryScreen().geometry().bottomRight())  # no hover effects in the shots
    window = MainWindow(AppPaths.under(root), target=MODEL)
    return drive(app, steps(window))


def main() -> int:
    """Check the model, start a display when there is none, take the screenshots, stop what it started."""
    if not (Path(MODEL) / "config.json").is_file():
        print(
            f"take_screenshots: no model at {MODEL} (set SPECCHAT_SCREENSHOT_MODEL to an MLX model folder)",
            file=sys.stderr,
        )
        return 2
    started = [] if os.environ.get("DISPLAY") else start_display()
    os.environ["QT_QPA_PLATFORM"] = "xcb"  # the real X window, never offscreen
    began = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="specchat-screens-") as root:
            os.environ["HF_HOME"] = str(Path(root) / "huggingface")  # an empty HF cache: no user models listed
            os.environ["HF_HUB_OFFLINE"] = "1"
            failure = run(Path(root))
    finally:
        for process in started:
            process.terminate()
            process.wait(10)
    if failure:
        print(f"take_screenshots: {failure}", file=sys.stderr)
        return 1
    print(f"done in {time.monotonic() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
