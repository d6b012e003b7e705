"""Keyboard all the way: Tab moves between the window's controls in layout order, Ctrl+Tab types a tab in
the message box, and every Tab stop shows a focus ring in the theme's accent colour, light and dark."""

import re

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication, QPushButton

from specchat.ui import theme
from specchat.ui.chat.composer import Composer
from specchat.ui.quick_switcher import tab_stops
from specchat.ui.theme_switch import switch

SHIFT, CTRL = Qt.KeyboardModifier.ShiftModifier, Qt.KeyboardModifier.ControlModifier
WAIT_MS = 10_000

# what must show a ring in the accent colour when it has the focus (combo and spin boxes keep the style's own
# focus frame, drawn in the palette's Highlight: the accent; the rendering test below sees it)
RING_SELECTORS = (
    "QPushButton",
    "QToolButton",
    "QToolButton#link",
    "QLineEdit",
    "QCheckBox",
    "#composer QPlainTextEdit",
    "#settingsPanel QPlainTextEdit",
    "#sidebar QListWidget",
    "#centralArea > QScrollArea",
)


def _ready_window(qtbot, open_window):
    window = open_window()
    window.composer.set_ready(True)  # Send is a Tab stop once it can send (no model needed to move the focus)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=WAIT_MS)
    return window


def _focus(qtbot, widget) -> None:
    widget.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(widget.hasFocus, timeout=WAIT_MS)


def _tab(qtbot, modifier=Qt.KeyboardModifier.NoModifier):
    before = QApplication.focusWidget()
    qtbot.keyClick(before, Qt.Key.Key_Backtab if modifier == SHIFT else Qt.Key.Key_Tab, modifier)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is not before, timeout=WAIT_MS)
    return QApplication.focusWidget()


def test_tab_leaves_the_message_box_for_send_and_the_next_control_and_shift_tab_comes_back(qtbot, open_window):
    window = _ready_window(qtbot, open_window)
    composer = window.composer
    _focus(qtbot, composer.text)
    qtbot.keyClicks(composer.text, "hello")
    assert _tab(qtbot) is composer.send_button
    assert composer.text.toPlainText() == "hello"  # no tab character typed
    assert _tab(qtbot) is composer.thinking  # Stop is hidden while no reply streams
    assert _tab(qtbot) is window.panel.preset  # the panel starts with its Preset combo
    assert _tab(qtbot, SHIFT) is composer.thinking
    assert _tab(qtbot, SHIFT) is composer.send_button
    assert _tab(qtbot, SHIFT) is composer.text
    assert composer.text.toPlainText() == "hello"


def test_ctrl_tab_types_a_tab_and_the_tooltip_says_so(qtbot):
    composer = Composer()
    qtbot.addWidget(composer)
    composer.show()
    _focus(qtbot, composer.text)
    qtbot.keyClicks(composer.text, "a")
    qtbot.keyClick(composer.text, Qt.Key.Key_Tab, CTRL)
    qtbot.keyClicks(composer.text, "b")
    assert composer.text.toPlainText() == "a\tb"
    assert composer.text.hasFocus()
    assert "Ctrl+Tab" in composer.text.toolTip()


def test_the_tab_order_follows_the_layout(qtbot, open_window):
    window = _ready_window(qtbot, open_window)
    order = tab_stops(window)
    panel, bar = window.panel, window.model_bar
    expected = [
        window.sidebar.new_button,
        window.sidebar.search,
        window.sidebar.list,
        bar.target,
        bar.draft,
        bar.load_button,
        bar.manager_button,
        window.transcript,
        window.composer.text,
        window.composer.send_button,
        window.composer.thinking,
        panel.system_prompt,
        panel.temperature,
        panel.max_tokens,
    ]
    positions = [order.index(widget) for widget in expected]
    assert positions == sorted(positions)
    dashboard = tab_stops(window.docks.dashboard)
    if dashboard:  # the dashboard's controls come after the settings panel
        assert order.index(dashboard[0]) > order.index(panel.max_tokens)


def _focus_rules(sheet: str) -> dict[str, str]:
    """{selector without ':focus': the rule's body} for every ':focus' rule of a style sheet."""
    rules = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", sheet):
        for selector in selectors.split(","):
            selector = " ".join(selector.split())
            if selector.endswith(":focus"):
                rules[selector.removesuffix(":focus")] = body
    return rules


@pytest.mark.parametrize("palette", [theme.LIGHT, theme.DARK], ids=["light", "dark"])
def test_each_kind_of_control_has_a_focus_ring_in_the_accent_colour(palette):
    rules = _focus_rules(theme.style_sheet(palette))
    for selector in RING_SELECTORS:
        assert selector in rules, f"no :focus rule for {selector}"
        assert re.search(rf"border:\s*2px solid {palette.accent}", rules[selector]), selector
    # on a button filled with the accent an accent ring would not show: it is drawn in the text colour
    assert f"2px solid {palette.text}" in rules["QPushButton#primary"]


def test_the_rules_can_fail(monkeypatch):
    """The check above reads the real sheet: without the focus rules it finds none."""
    monkeypatch.setattr(theme, "focus_sheet", lambda p=None: "")
    assert not _focus_rules(theme.style_sheet(theme.LIGHT))


def _near(a: QColor, b: QColor, slack: int = 90) -> bool:
    """Close colours (a style's own focus frame is a lighter accent); a plain border is far (over 230)."""
    return abs(a.red() - b.red()) + abs(a.green() - b.green()) + abs(a.blue() - b.blue()) <= slack


def _has_ring(widget, colour: str) -> bool:
    """Some pixel of the widget's left edge (the middle third, the first three columns) is the ring colour."""
    image = widget.grab().toImage()
    want, height = QColor(colour), image.height()
    return any(
        _near(image.pixelColor(x, y), want) for x in range(0, 3) for y in range(height // 3, 2 * height // 3 + 1)
    )


@pytest.fixture
def themes():
    before = switch().choice
    yield switch()
    switch().set_choice(before)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_tab_stop_in_the_window_shows_the_ring(qtbot, open_window, themes, scheme):
    window = _ready_window(qtbot, open_window)
    themes.set_choice(scheme)
    palette = theme.LIGHT if scheme == "light" else theme.DARK
    stops = [w for w in tab_stops(window) if w.isVisible() and w.isEnabled() and not w.inherits("QTabBar")]
    assert len(stops) >= 12
    _focus(qtbot, stops[-1])
    visited, missing = [], []
    for _ in range(len(stops) + 5):  # Tab round the window, as a keyboard user would
        widget = _tab(qtbot)
        if widget.inherits("QTabBar"):  # the docks' tabs: the style draws their focus
            continue
        visited.append(widget)
        primary = isinstance(widget, QPushButton) and widget.objectName() == "primary"
        if not _has_ring(widget, palette.text if primary else palette.accent):
            missing.append(f"{type(widget).__name__} {widget.objectName()}")
        if widget is stops[-1]:
            break
    assert visited == stops  # Tab stopped at each control in turn
    assert not missing, f"no visible focus ring on {missing}"
