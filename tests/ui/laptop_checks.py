"""Checks run on one laptop-sized offscreen screen (test_laptop_screens.py starts one process per size).

Not collected on its own (no test_ prefix): the screen comes from QT_QPA_PLATFORM's configfile.
"""

import os

import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtWidgets import QApplication, QLabel

from specchat.settings import Settings
from specchat.system.memory import MachineMemory, MemorySample
from specchat.system.power import PowerStatus

from .conftest import screenshot

SCREEN = os.environ.get("SPECCHAT_TEST_SCREEN", "")
CHAT_MIN = 480
GB = 10**9
NO_BATTERY = PowerStatus("ac", None, None, "No battery found; assuming mains power")
ROOMY = MachineMemory(total_bytes=16 * GB, available_bytes=8 * GB, gpu_working_set_bytes=None, source="test")

pytestmark = pytest.mark.skipif(not SCREEN, reason="run by test_laptop_screens.py on a configured screen")


def available() -> QRect:
    return QApplication.primaryScreen().availableGeometry()


def assert_fits(window, what: str) -> None:
    """The window's frame lies inside the screen's available area."""
    frame, screen = window.frameGeometry(), available()
    assert screen.contains(frame), f"{what}: frame {frame.getRect()} leaves the screen {screen.getRect()}"
    least = window.minimumSizeHint()
    assert least.width() <= screen.width() and least.height() <= screen.height(), (
        f"{what}: minimum size {least.toTuple()} is larger than the screen {screen.size().toTuple()}"
    )


def chat_width(window) -> int:
    return window.transcript.parentWidget().width()


def clipped(label: QLabel, what: str) -> list[str]:
    """[] when the label shows its whole text: one line fits its width, wrapped text fits its height."""
    if not label.isVisibleTo(label.window()) or not label.text():
        return []
    if label.wordWrap():
        need, has = label.heightForWidth(label.width()), label.height()
    else:
        need, has = label.sizeHint().width(), label.width()
    return [f"{what}: {label.text()!r} needs {need} px, has {has}"] if need > has + 1 else []


def assert_shown_whole(qtbot, labels: dict[str, QLabel]) -> None:
    """Every label shows its whole text once the layout has settled."""

    def problems():
        return [p for what, label in labels.items() for p in clipped(label, what)]

    try:
        qtbot.waitUntil(lambda: not problems(), timeout=30_000)
    except Exception:
        pass
    assert problems() == []


def test_main_window_with_the_dashboard_docked_fits(qtbot, open_window):
    window = open_window()
    docks = window.docks
    dock = docks.dashboard_dock
    # a first start on a laptop: the dashboard beside the chat, not floating, the window on the screen
    assert dock.isVisible() and not dock.isFloating()
    qtbot.waitUntil(lambda: chat_width(window) >= CHAT_MIN, timeout=60_000)
    assert_fits(window, "first start")
    window.model_bar.set_loaded("Ready · Qwen3-8B-4bit + Qwen3-0.6B-4bit")
    assert_shown_whole(qtbot, {"legend": window.legend, "mode": window.mode_label, "queue": window.queue_label})
    assert dock.width() >= docks.dashboard.minimumSizeHint().width()
    assert dock.height() >= docks.dashboard.minimumSizeHint().height()
    # a long pair name shortens in the toolbar rather than widening the window
    window.model_bar.set_loaded("Ready · " + "Qwen3.5-27B-Instruct-MLX-4bit-very-long-name " * 4)
    qtbot.wait(20)
    assert_fits(window, "long toolbar text")
    assert window.model_bar.state.is_elided()
    qtbot.wait(50)
    screenshot(window, f"laptop_{SCREEN}_main_window")
    for turn in range(2):  # hiding and showing again never leaves the window wider than the screen
        docks.dashboard_action.trigger()
        qtbot.waitUntil(lambda: not dock.isVisible(), timeout=60_000)
        assert_fits(window, f"dashboard hidden ({turn})")
        docks.dashboard_action.trigger()
        qtbot.waitUntil(lambda: dock.isVisible(), timeout=60_000)
        qtbot.waitUntil(lambda: chat_width(window) >= CHAT_MIN, timeout=60_000)
        assert not dock.isFloating()
        assert_fits(window, f"dashboard shown again ({turn})")


def test_a_dock_dragged_as_wide_as_it_goes_leaves_the_chat_its_minimum(qtbot, open_window, paths):
    window = open_window()
    dock = window.docks.dashboard_dock
    qtbot.waitUntil(lambda: chat_width(window) >= CHAT_MIN, timeout=60_000)
    window.resizeDocks([dock], [window.width()], Qt.Orientation.Horizontal)  # dragged as wide as it goes
    qtbot.wait(50)
    assert chat_width(window) >= CHAT_MIN
    assert_fits(window, "dock dragged wide")
    window.close()  # saves the layout
    again = open_window(at=paths)
    assert again.docks.dashboard_dock.isVisible()
    qtbot.waitUntil(lambda: chat_width(again) >= CHAT_MIN, timeout=60_000)
    assert_fits(again, "restored layout")


def test_the_dashboard_beside_the_chat_shows_everything(qtbot, open_window):
    window = open_window()
    dash, dock = window.docks.dashboard, window.docks.dashboard_dock
    qtbot.waitUntil(lambda: chat_width(window) >= CHAT_MIN, timeout=60_000)
    dash.poller.stop()
    dash.memory.clear()  # only the readings below, not this machine's
    for n in range(5):  # MLX uses about 1-2 GB while the machine has 9 GB free
        dash.on_memory(
            MemorySample(
                1_700_000_000.0 + n,
                int((1.0 + 0.1 * n) * GB),
                int((1.5 + 0.1 * n) * GB),
                int(0.2 * GB),
                int(2.5 * GB),
                16 * GB,
                int(9 * GB),
            )
        )
    dash.on_power(NO_BATTERY, None)
    dash.set_weights_bytes(int(1.2 * GB))
    dash.redraw()
    dash.status.setText("Last chat reply: Draft model, K=4 · 512 tokens · 251.1 tok/s decode · stopped: length")
    qtbot.wait(50)
    # no battery: the power panel is one line below the charts, not a chart
    power = dash.power_chart
    assert power.compact and power.height() < 40 and power not in dash.charts.cards
    assert power.note.text() == "No battery: on mains power."
    # the MLX lines use the left axis' height; system memory has its own axis on the right
    low, high = dash.memory_chart.plot.getPlotItem().getViewBox().viewRange()[1]
    assert low == 0 and 1.9 <= high <= 1.9 * 1.25
    assert 9 <= dash.memory_chart.system_view.viewRange()[1][1] <= 9 * 1.25
    # tiles wrap, keep their texts whole; the charts show in tabs or a grid, each at a readable size
    labels = {
        f"tile {name} {part}": getattr(tile, part)
        for name, tile in dash.tiles.items()
        for part in ("title", "value", "sub")
    }
    labels.update({f"{type(card).__name__} empty note": card.empty for card in dash.charts.cards})
    labels.update({"power line": power.note, "status": dash.status})
    assert_shown_whole(qtbot, labels)
    tiles = list(dash.tiles.values())
    assert not [(a, b) for a in tiles for b in tiles if a is not b and a.geometry().intersects(b.geometry())]
    for card in dash.charts.cards:
        if card.isVisible():
            assert card.plot.width() >= 180 and card.plot.height() >= 120, type(card).__name__
    assert dock.width() >= dash.minimumSizeHint().width()
    assert dash.charts.height() >= dash.charts.minimumSizeHint().height()
    screenshot(dock, f"laptop_{SCREEN}_dashboard")


def test_the_models_window_fits_and_closes_with_esc_and_ctrl_w(qtbot, paths):
    from specchat.ui.models import ModelsWindow

    for key in (Qt.Key.Key_Escape, Qt.Key.Key_W):
        window = ModelsWindow(paths, Settings(), read_memory=lambda: ROOMY, autostart=False)
        qtbot.addWidget(window)
        window.show()
        window.activateWindow()
        qtbot.waitUntil(window.isActiveWindow, timeout=60_000)
        qtbot.waitUntil(lambda: window.frameGeometry().topLeft() != QPoint(-1, -1), timeout=60_000)
        assert_fits(window, "models window")
        if key == Qt.Key.Key_Escape:
            screenshot(window, f"laptop_{SCREEN}_models_window")
        modifier = Qt.KeyboardModifier.ControlModifier if key == Qt.Key.Key_W else Qt.KeyboardModifier.NoModifier
        qtbot.keyClick(window.search_box, key, modifier)
        qtbot.waitUntil(lambda: not window.isVisible(), timeout=60_000)
        assert window.closed  # closing stopped its threads


def test_every_panel_opened_run_and_closed_keeps_the_window_on_the_screen(qtbot, open_window, dense_target):
    """Open and close every panel, run a tiny A/B and sweep: the window never leaves the screen and the chat column
    never drops below CHAT_MIN, however the panels were shown."""
    window = open_window(dense_target, dense_target)  # the target drafting for itself: draft mode available
    assert window.pair is not None, window.banner.text.text()
    docks = window.docks
    seen: list[str] = []

    def check(what: str) -> None:
        qtbot.wait(30)  # queued layout passes (QTimer.singleShot(0)) run before the check
        qtbot.waitUntil(lambda: chat_width(window) >= CHAT_MIN, timeout=30_000)
        assert_fits(window, what)
        for dock in (docks.dashboard_dock, docks.sweep_dock):
            if dock.isVisible() and dock.isFloating():
                assert available().contains(dock.frameGeometry()), f"{what}: {dock.objectName()} leaves the screen"
        seen.append(what)

    check("start")
    for turn in range(2):
        docks.sweep_action.trigger()
        qtbot.waitUntil(docks.sweep_dock.isVisible, timeout=60_000)
        check(f"sweep shown ({turn})")
        sweep, ab = docks.sweep_view, docks.sweep_view.ab
        if turn == 0:
            ab.max_tokens.setValue(4)
            with qtbot.waitSignal(ab.compared, timeout=300_000):
                ab.start()
            check("after an A/B run")
            sweep.ks_edit.setText("1,2")
            sweep.reps.setValue(1)
            sweep.warmup.setValue(0)
            sweep.max_tokens.setValue(4)
            for box in list(sweep.prompt_boxes.values())[1:]:
                box.setChecked(False)
            with qtbot.waitSignal(sweep.sweepFinished, timeout=300_000):
                assert sweep.start()
            check("after a sweep")
        docks.dashboard_action.trigger()
        check(f"dashboard toggled ({turn})")
        window.panel_action.trigger()
        check(f"settings toggled ({turn})")
        window.panel_action.trigger()
        check(f"settings toggled back ({turn})")
        window.panel.system_prompt.setPlainText("Answer in one sentence. " * 20)
        check(f"long system prompt ({turn})")
        docks.sweep_action.trigger()
        qtbot.waitUntil(lambda: not docks.sweep_dock.isVisible(), timeout=60_000)
        check(f"sweep hidden ({turn})")
        docks.dashboard_action.trigger()
        check(f"dashboard toggled again ({turn})")
    window.preferences.action.trigger()
    dialog = window.preferences.dialog
    qtbot.waitUntil(dialog.isVisible, timeout=60_000)
    assert available().contains(dialog.frameGeometry()), "preferences leave the screen"
    dialog.close()
    check("preferences closed")
    assert len(seen) == 18
