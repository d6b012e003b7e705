"""Make the README and guide screenshots from the real app window, in light and dark.

    . .venv/bin/activate && python docs/screenshots/take_screenshots.py

writes, beside this script, each in a -light and a -dark PNG: window (a real reply with prompt-lookup
tints and the dashboard beside the chat), speculation-menu (the menu opened from the menu bar), models
(the Models window), preset-combo (the Settings panel's Preset list), composer-attachment (a message with
an attached file and the context fill) and server-log (Server ▸ Server log… after three API requests).

It loads the real SmolLM2-135M-Instruct (MLX 4-bit) from MODEL (or $SPECCHAT_SCREENSHOT_MODEL) in a
MainWindow whose folders all live in a temporary folder, never the user's, so the dashboard measures
plain decoding afresh before the reply: "vs plain decode" compares the two on the same run. The reply
repeats a paragraph of the prompt, the kind of copying where prompt lookup pays. When
DISPLAY is not set it starts `Xvfb -screen 0 1280x800x24` on a free display and `openbox`, so the grabs
include the window manager's title bars; the hub is kept offline (HF_HUB_OFFLINE=1). On 2 busy CPU
cores it takes several minutes.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from driving import HERE, Failure, Steps, drive, global_rect, grab, on_top, settle, start_display, until
from serving import serve_and_ask

MODEL = os.environ.get("SPECCHAT_SCREENSHOT_MODEL", "/work/shared/models/smollm2-135m-instruct-4bit")
SCREEN = "1280x800x24"
THEMES = ("light", "dark")
MODE, K = "lookup", "auto"  # prompt lookup, K chosen each round (Auto K)
MAX_TOKENS = 120
FUNCTION = """def summarize_orders(orders, tax_rate, discount):
    subtotal = 0
    count = 0
    for order in orders:
        if order.cancelled:
            continue
        subtotal += order.price * order.quantity
        count += 1
    if count == 0:
        return None
    discounted = subtotal - subtotal * discount
    taxed = discounted * (1 + tax_rate)
    average = taxed / count
    return {"count": count, "subtotal": subtotal, "total": taxed, "average": averag}
"""
PROMPT = """Repeat the following text exactly, word for word:

The quick brown fox jumps over the lazy dog. The early bird catches the worm. A stitch in time saves nine. \
Actions speak louder than words. Better late than never. Birds of a feather flock together. Every cloud has \
a silver lining. Practice makes perfect. Where there is a will, there is a way. When in Rome, do as the \
Romans do."""
FOLLOW_UP = "Add a docstring to the function in this file."
LOAD_S, REPLY_S, SCAN_S = 600, 900, 60  # generous upper bounds of the waits (2 busy CPU cores)


def stage_presets(window) -> None:
    """Save two presets, as Save current as preset… would, and give the chat the first (it fills max tokens)."""
    from specchat.store.presets import PresetFields, save_preset

    store = window.chat.store
    chosen = save_preset(store, "Code edits", PresetFields("", 0.0, 1.0, 0, 0.0, MAX_TOKENS))
    save_preset(store, "Brainstorm", PresetFields("Offer several different ideas.", 0.8, 0.95, 0, 0.05, 1024))
    window.presets.pick(chosen)


def load_and_reply(window, measured: list) -> Steps:
    """Wait for the model and its plain-decode measurement, choose MODE at K, send PROMPT."""
    yield until("the model to load", lambda: window.pair is not None or window.banner.level == "error", LOAD_S)
    if window.pair is None:
        raise Failure(f"the model did not load: {window.banner.text.text()}")
    yield until("the plain-decode measurement", lambda: bool(measured), LOAD_S)
    print(f"plain decode: {measured[0]:.1f} tok/s", flush=True)
    window.speculation.mode_actions[MODE].trigger()  # as the menu item does: modeChosen -> _mode_chosen
    (window.speculation.auto_action if K == "auto" else window.speculation.k_actions[K]).trigger()
    stage_presets(window)
    finished: list = []
    window.chat.replyFinished.connect(finished.append)
    window.composer.text.setPlainText(PROMPT)
    window.composer.send_button.click()
    yield until("the reply", lambda: bool(finished) or window.banner.level == "error", REPLY_S)
    if not finished:
        raise Failure(f"the reply failed: {window.banner.text.text()}")
    stats = finished[0].stats
    tile = window.docks.dashboard.tiles["vs_plain"]
    print(f"reply: {stats.generated_tokens} tokens, {stats.rounds} rounds, {stats.acceptance_rate:.0%} accepted,")
    print(f"  {stats.decode_tokens_per_s:.1f} tok/s; vs plain decode {tile.value.text()} ({tile.sub.text()})")


def shoot_window(window, theme: str) -> Steps:
    """The main window with its title bar, the Settings panel hidden (View ▸ Settings panel) so the chat
    column shows the code unwrapped at 1280 pixels."""
    window.panel_action.setChecked(False)
    yield from on_top(window)
    grab(window.frameGeometry(), HERE / f"window-{theme}.png")


def shoot_menu(window, theme: str) -> Steps:
    """The Speculation menu as a click on the menu bar opens it, over the window."""
    yield from on_top(window)
    menu = window.speculation
    window.menuBar().setActiveAction(menu.menuAction())
    yield until("the Speculation menu", menu.isVisible, 10)
    yield from settle(1.0)
    grab(window.frameGeometry().united(menu.frameGeometry()), HERE / f"speculation-menu-{theme}.png")
    menu.close()
    window.panel_action.setChecked(True)
    yield from settle(0.5)


def shoot_models(window, theme: str) -> Steps:
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


def shoot_presets(window, theme: str) -> Steps:
    """The Settings panel with its Preset list open (the chat's preset, the others, the actions)."""
    yield from on_top(window)
    combo = window.panel.preset
    combo.showPopup()
    popup = combo.view().window()
    yield until("the Preset list", popup.isVisible, 10)
    yield from settle(1.0)
    rect = global_rect(window.panel, 8).united(popup.frameGeometry().adjusted(-8, -8, 8, 8))
    rect.setBottom(min(rect.bottom(), global_rect(window.panel.max_tokens).bottom() + 16))
    grab(rect, HERE / f"preset-combo-{theme}.png")
    combo.hidePopup()
    yield from settle(0.5)


def attach_file(window, root: Path) -> Steps:
    """Type a follow-up and attach a file to it, as the paperclip does; wait for the context fill to count it.
    A composer that holds them already (a theme switch keeps what is being written) is left as it is."""
    source = root / "orders.py"
    composer, label = window.composer, window.composer.fill_label
    if any(a.name == source.name for a in composer.tray.attachments):
        yield until("the context fill", lambda: label.isVisible() and label.text() != "", 120)
        return
    source.write_text(FUNCTION, encoding="utf-8")
    before = label.text()
    composer.text.setPlainText(FOLLOW_UP)
    composer.add_files([str(source)])
    yield until("the context fill", lambda: label.isVisible() and label.text() not in ("", before), 120)


def shoot_composer(window, theme: str, root: Path) -> Steps:
    """The composer with its attached file's chip and the context fill beside Send."""
    yield from attach_file(window, root)
    yield from on_top(window)
    grab(global_rect(window.composer, 8), HERE / f"composer-attachment-{theme}.png")


def shoot_server_log(window, theme: str) -> Steps:
    """Server ▸ Server log…, its rows the API requests serve_and_ask sent."""
    log_window = window.server.show_log()
    yield from on_top(log_window)
    grab(log_window.frameGeometry(), HERE / f"server-log-{theme}.png")
    log_window.hide()
    yield from settle(0.5)


def in_each_theme(window, *shots) -> Steps:
    """Each shot in each theme, switched as Preferences ▸ Appearance does."""
    for theme in THEMES:
        window.preferences.apply({"theme": theme})
        yield from settle(1.0)
        for shoot in shots:
            yield from shoot(window, theme)


def steps(window, root: Path, measured: list) -> Steps:
    """One real reply and the window's shots; a file attached; API requests and the server log; close."""
    window.preferences.apply({"theme": THEMES[0]})
    window.show()
    yield from load_and_reply(window, measured)
    yield from in_each_theme(window, shoot_window, shoot_menu, shoot_models, shoot_presets)
    yield from in_each_theme(window, lambda w, theme: shoot_composer(w, theme, root))
    yield from serve_and_ask(window, MODEL)  # after the window's shots: the dashboard follows API requests
    yield from in_each_theme(window, shoot_server_log)
    window.server.stop()
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
    measured: list = []  # the plain-decode tok/s measured on this run (a fresh folder has none kept)
    window.docks.baselineMeasured.connect(lambda _key, tps: measured.append(tps))
    return drive(app, steps(window, root, measured))


def main() -> int:
    """Check the model, start a display when there is none, take the screenshots, stop what it started."""
    if not (Path(MODEL) / "config.json").is_file():
        print(
            f"take_screenshots: no model at {MODEL} (set SPECCHAT_SCREENSHOT_MODEL to an MLX model folder)",
            file=sys.stderr,
        )
        return 2
    started = [] if os.environ.get("DISPLAY") else start_display(SCREEN)
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
