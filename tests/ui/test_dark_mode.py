"""Light and dark: the palette follows the system's colour scheme or the user's choice; screenshots of both."""

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QGuiApplication

from specchat.ui import theme
from specchat.ui.chat.highlight import colour_spans
from specchat.ui.theme_switch import switch
from tests.hub.conftest import hub_env  # noqa: F401  (HF cache in tmp_path, no network)

from .conftest import screenshot, send


@pytest.fixture(autouse=True)
def _back_to_light():
    yield
    switch().set_choice("light")


def _lightness(widget, point: QPoint) -> float:
    return QColor(widget.grab().toImage().pixel(point)).lightnessF()


def _window_with_a_reply(qtbot, open_window, dense_target, choice: str):
    window = open_window(dense_target)
    window.preferences.apply({"theme": choice})
    send(qtbot, window, "Show me some code: ```python\nprint('hi')\n```")
    window.docks.dashboard_dock.show()
    window.resize(1280, 820)
    qtbot.wait(50)
    return window


@pytest.mark.slow
def test_dark_mode_screenshot_has_a_dark_window_and_light_text(qtbot, open_window, dense_target):
    window = _window_with_a_reply(qtbot, open_window, dense_target, "dark")
    assert theme.is_dark() and window.settings.theme == "dark"
    screenshot(window, "dark_mode_window")
    center = window.centralWidget().widget(1)  # the chat column
    assert _lightness(center, QPoint(6, center.height() // 2)) < 0.2
    text = QColor(theme.TEXT)
    assert text.lightnessF() > 0.8
    assert QGuiApplication.palette().color(QGuiApplication.palette().ColorRole.WindowText).lightnessF() > 0.8
    assert QGuiApplication.palette().color(QGuiApplication.palette().ColorRole.Base).lightnessF() < 0.2
    assert "#181a1f" in window.styleSheet()
    # the charts follow: a dark plot background
    plot = window.docks.dashboard.throughput.plot
    assert plot.backgroundBrush().color().lightnessF() < 0.2
    card = window.docks.dashboard
    screenshot(card, "dark_mode_dashboard")


@pytest.mark.slow
def test_light_mode_screenshot_has_a_light_window_and_dark_text(qtbot, open_window, dense_target):
    window = _window_with_a_reply(qtbot, open_window, dense_target, "light")
    assert not theme.is_dark()
    screenshot(window, "light_mode_window")
    center = window.centralWidget().widget(1)
    assert _lightness(center, QPoint(6, center.height() // 2)) > 0.9
    assert QColor(theme.TEXT).lightnessF() < 0.2
    assert window.docks.dashboard.throughput.plot.backgroundBrush().color().lightnessF() > 0.9


def test_switching_at_run_time_restyles_what_is_already_on_screen(qtbot, open_window):
    window = open_window()
    window.banner.show_message("Something to note", "warning", "technical detail")
    light_banner = window.banner.styleSheet()
    plot = window.docks.dashboard.throughput.plot
    window.preferences.apply({"theme": "dark"})
    assert window.banner.styleSheet() != light_banner and theme.BANNER_WARNING[0] in window.banner.styleSheet()
    assert plot.backgroundBrush().color().name() == theme.DARK.chart_bg
    assert theme.DARK.window_bg in window.styleSheet()
    window.preferences.apply({"theme": "light"})
    assert plot.backgroundBrush().color().name() == theme.LIGHT.chart_bg
    assert window.banner.styleSheet() == light_banner


@pytest.mark.slow
def test_system_follows_the_colour_scheme_and_its_changes(qtbot, open_window, monkeypatch):
    """The offscreen platform has no scheme of its own: the system's answer is stood in for, and its
    change arrives through the real QStyleHints.colorSchemeChanged signal."""
    hints = QGuiApplication.styleHints()
    scheme = {"now": Qt.ColorScheme.Light}
    monkeypatch.setattr(switch(), "system_scheme", lambda: scheme["now"])
    window = open_window()
    window.preferences.apply({"theme": "system"})
    assert not theme.is_dark()
    scheme["now"] = Qt.ColorScheme.Dark  # the user switches the OS to dark
    hints.colorSchemeChanged.emit(Qt.ColorScheme.Dark)
    assert theme.is_dark() and theme.DARK.window_bg in window.styleSheet()
    scheme["now"] = Qt.ColorScheme.Light
    hints.colorSchemeChanged.emit(Qt.ColorScheme.Light)
    assert not theme.is_dark() and theme.LIGHT.window_bg in window.styleSheet()
    window.preferences.apply({"theme": "dark"})  # a forced choice ignores the system
    hints.colorSchemeChanged.emit(Qt.ColorScheme.Light)
    assert theme.is_dark()


def _code_colours(view) -> tuple[set[str], set[str]]:
    """(foreground colours, block backgrounds) in a rendered view."""
    fg, bg = set(), set()
    block = view.document().begin()
    while block.isValid():
        bg.add(block.blockFormat().background().color().name())
        it = block.begin()
        while not it.atEnd():
            fg.add(it.fragment().charFormat().foreground().color().name())
            it += 1
        block = block.next()
    return fg, bg


def test_code_blocks_use_the_dark_highlighting_in_dark_mode(qtbot):
    from specchat.ui.chat.markdown_view import MarkdownView

    code = "def f(x):\n    return x + 1  # one more"
    light = {s.colour for s in colour_spans(code, "python")}
    dark = {s.colour for s in colour_spans(code, "python", dark=True)}
    text = f"```python\n{code}\n```"
    for choice, wanted, other, code_bg in (
        ("dark", dark, light, theme.DARK.code_bg),
        ("light", light, dark, theme.LIGHT.code_bg),
    ):
        switch().set_choice(choice)
        view = MarkdownView()
        qtbot.addWidget(view)
        view.set_markdown_text(text)
        fg, bg = _code_colours(view)
        assert fg & (wanted - other), choice
        assert not fg & (other - wanted), choice
        assert code_bg in bg


@pytest.mark.slow
def test_preferences_and_models_window_in_dark_mode(qtbot, open_window, hub_env):  # noqa: F811
    window = open_window()
    window.preferences.apply({"theme": "dark"})
    dialog = window.preferences.open()
    qtbot.waitExposed(dialog)
    screenshot(dialog, "dark_mode_preferences")
    assert _lightness(dialog, QPoint(3, dialog.height() // 2)) < 0.2
    dialog.reject()
    models = window.models.open()
    qtbot.waitUntil(lambda: not models.runner.busy, timeout=120_000)
    screenshot(models, "dark_mode_models_window")
    assert _lightness(models, QPoint(3, models.height() // 2)) < 0.2
    models.close()
