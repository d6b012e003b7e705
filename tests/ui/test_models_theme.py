"""The Models window in light and dark: readable pills and muted lines, a disabled Download that looks
disabled, room around the hub pill, and columns that give the model's name the width."""

import re
from collections import Counter

import pytest
from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics

from specchat.hub.config import HubConfig
from specchat.paths import AppPaths
from specchat.settings import Settings
from specchat.system.memory import MachineMemory
from specchat.ui import theme
from specchat.ui.models import ModelsWindow
from specchat.ui.models.delegates import NAME_INSETS, STATE_TONES
from specchat.ui.models.rows import DOWNLOADING, Transfer, row_key
from specchat.ui.models.style import tone_colours
from specchat.ui.models.table_model import NAME, PROGRESS, QUANTIZATION
from specchat.ui.models.window import DEFAULT_SIZE
from specchat.ui.screen_fit import fit_to_screen
from specchat.ui.theme_switch import switch
from tests.fixtures.tiny_models import build_dense
from tests.hub.conftest import DRAFT_REPO

TASK_TIMEOUT_MS = 30_000
LAPTOP_SCREEN = QRect(0, 0, 1280, 800)
TYPICAL_NAME = "smollm2-135m-instruct-4bit"  # a folder of the user's, shown in bold
OPTIQ = "4bit (OptiQ mixed)"  # the catalog's longest quantization
MIN_CONTRAST = 4.5  # WCAG AA for normal text
MIN_PILL_GAP = 8
ROOMY = MachineMemory(
    total_bytes=16_000_000_000, available_bytes=8_000_000_000, gpu_working_set_bytes=None, source="test"
)
THEMES = ("light", "dark")


@pytest.fixture(autouse=True)
def _back_to_light():
    yield
    switch().set_choice("light")


@pytest.fixture
def models_window(qtbot, tmp_path):
    """A shown ModelsWindow on this test's folders, after its first search and scan answered."""
    windows = []

    def make(folders=()) -> ModelsWindow:
        settings = Settings(extra_model_dirs=[str(f) for f in folders])
        config = HubConfig.from_env(timeout_s=5.0, deadline_s=5.0)
        window = ModelsWindow(AppPaths.under(tmp_path / "home"), settings, config=config, read_memory=lambda: ROOMY)
        windows.append(window)
        window.show()
        qtbot.waitUntil(lambda: not window.runner.busy, timeout=TASK_TIMEOUT_MS)
        return window

    yield make
    for window in windows:
        window.shutdown()
        window.close()


def luminance(colour: QColor) -> float:
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(colour.redF()) + 0.7152 * linear(colour.greenF()) + 0.0722 * linear(colour.blueF())


def contrast(a, b) -> float:
    """The WCAG 2 contrast ratio of two colours (1 to 21)."""
    high, low = sorted((luminance(QColor(a)), luminance(QColor(b))), reverse=True)
    return (high + 0.05) / (low + 0.05)


SPAN = re.compile(r"<(?:span|i) style='([^']*)'>")


def styled_spans(html: str) -> list[dict[str, str]]:
    """The style properties of each span (and italic) in a label's rich text."""
    spans = []
    for style in SPAN.findall(html):
        props = dict(part.split(":", 1) for part in style.split(";") if ":" in part)
        spans.append({key.strip(): value.strip() for key, value in props.items()})
    return spans


def pills(html: str) -> list[tuple[str, str]]:
    """(background, text colour) of each pill in a label's rich text."""
    return [(s["background"], s["color"]) for s in styled_spans(html) if "background" in s]


def coloured_words(html: str) -> list[str]:
    """The text colours of spans without a background of their own (muted lines and notes)."""
    return [s["color"] for s in styled_spans(html) if "background" not in s and "color" in s]


def assert_readable_pills(html: str, what: str, dark: bool) -> None:
    found = pills(html)
    assert found, f"no pill in the {what}: {html!r}"
    for background, colour in found:
        ratio = contrast(background, colour)
        assert ratio >= MIN_CONTRAST, f"{what}: {colour} on {background} has contrast {ratio:.2f}"
        lightness = QColor(background).lightnessF()
        if dark:
            assert lightness < 0.35, f"{what}: a light pill ({background}) in dark mode"
        else:
            assert lightness > 0.75, f"{what}: a dark pill ({background}) in light mode"


def test_pair_builder_pills_and_muted_lines_follow_the_theme_readably(
    qtbot, hub, models_window, dense_target, dense_draft_partial
):
    window = models_window([dense_target, dense_draft_partial])
    panel = window.pair_panel
    with qtbot.waitSignal(panel.checked, timeout=TASK_TIMEOUT_MS):
        panel.choose(target=str(dense_target))
    assert "Target alone" in panel.verdict.text() and "Fits" in panel.fit_label.text()
    for choice in THEMES:
        switch().set_choice(choice)  # as Preferences does: the window already on screen re-styles
        dark = choice == "dark"
        assert theme.is_dark() == dark
        assert_readable_pills(panel.verdict.text(), f"'Target alone' ({choice})", dark)
        assert_readable_pills(panel.fit_label.text(), f"'Fits' ({choice})", dark)
        assert_readable_pills(window.state_label.text(), f"hub pill ({choice})", dark)
        lines = coloured_words(panel.fit_label.text())
        assert lines, panel.fit_label.text()  # "at 8,192 tokens of context · … free now"
        for colour in lines:
            ratio = contrast(colour, theme.SURFACE)  # the pair builder's background
            assert ratio >= MIN_CONTRAST, f"the line under 'Fits' ({choice}): {colour} has contrast {ratio:.2f}"
        background = QColor(pills(panel.verdict.text())[0][0])
        shown = panel.verdict.grab().toImage()
        colours = {shown.pixelColor(x, y).name() for x in range(shown.width()) for y in range(shown.height())}
        assert background.name() in colours, f"the verdict pill is not painted in {background.name()} ({choice})"
    with qtbot.waitSignal(panel.checked, timeout=TASK_TIMEOUT_MS):
        panel.choose(draft=str(dense_draft_partial))
    assert "Compatible" in panel.verdict.text()
    for choice in THEMES:
        switch().set_choice(choice)
        assert_readable_pills(panel.verdict.text(), f"'Compatible' ({choice})", choice == "dark")
        for colour in coloured_words(panel.checks.text()) + re.findall(
            r"td style='color:([^;']+)", panel.checks.text()
        ):
            ratio = contrast(colour, theme.PANEL_BG)  # the checks box's background
            assert ratio >= MIN_CONTRAST, f"a check's mark ({choice}): {colour} has contrast {ratio:.2f}"


def test_status_pills_and_muted_cells_are_readable_in_both_themes(qtbot, hub, models_window):
    window = models_window()
    model = window.table_model
    hub_row = model.position(row_key(DRAFT_REPO))  # not on disk: its cells are muted
    assert hub_row is not None
    for choice in THEMES:
        switch().set_choice(choice)
        for state, tone in STATE_TONES.items():
            background, colour = tone_colours(tone)
            assert contrast(background, colour) >= MIN_CONTRAST, f"{state} pill ({choice})"
            assert (QColor(background).lightnessF() < 0.35) == (choice == "dark"), f"{state} pill ({choice})"
        muted = model.data(model.index(hub_row, QUANTIZATION), Qt.ItemDataRole.ForegroundRole)
        for background in (theme.SURFACE, theme.PANEL_BG):  # the table's rows and its alternate rows
            ratio = contrast(muted, background)
            assert ratio >= MIN_CONTRAST, f"muted cell ({choice}): {muted.name()} on {background}: {ratio:.2f}"


def button_colours(button) -> tuple[QColor, QColor]:
    """(background, text) as painted: the commonest colour, and the colour that contrasts with it most."""
    image = button.grab().toImage()
    counts = Counter(image.pixel(x, y) for x in range(image.width()) for y in range(image.height()))
    background = QColor.fromRgb(counts.most_common(1)[0][0])
    text = max((QColor.fromRgb(p) for p in counts), key=lambda c: contrast(c, background))
    return background, text


def test_a_disabled_download_button_looks_disabled_in_both_themes(qtbot, hub, models_window):
    window = models_window()
    assert window.hub_state == "online"
    download = window.buttons["download"]
    for choice in reversed(THEMES):  # dark first: there it looked enabled
        switch().set_choice(choice)
        window.select(row_key(DRAFT_REPO))  # on the hub, not on disk: downloadable
        qtbot.waitUntil(download.isEnabled, timeout=TASK_TIMEOUT_MS)
        on_background, on_text = button_colours(download)
        window.select()
        qtbot.waitUntil(lambda: not download.isEnabled(), timeout=TASK_TIMEOUT_MS)
        off_background, off_text = button_colours(download)
        assert off_background.hsvSaturationF() < 0.25, f"{choice}: disabled Download on {off_background.name()}"
        assert contrast(on_background, off_background) > 1.3, (
            f"{choice}: disabled {off_background.name()} vs enabled {on_background.name()}"
        )
        assert abs(on_text.lightnessF() - off_text.lightnessF()) > 0.2, (
            f"{choice}: the disabled text {off_text.name()} reads like the enabled {on_text.name()}"
        )
        assert QColor(theme.MUTED).lightnessF() == pytest.approx(off_text.lightnessF(), abs=0.12), (
            f"{choice}: disabled text {off_text.name()} is not the muted colour {theme.MUTED}"
        )


def test_the_hub_pill_keeps_its_distance_from_the_pair_builder(qtbot, hub, models_window):
    window = models_window()
    fit_to_screen(window, QSize(*DEFAULT_SIZE), LAPTOP_SCREEN)
    label, panel = window.state_label, window.pair_panel

    def gap() -> int:
        right = label.mapTo(window, QPoint(label.width(), 0)).x()  # one past the pill's last pixel
        return panel.mapTo(window, QPoint(0, 0)).x() - right

    qtbot.waitUntil(lambda: gap() >= MIN_PILL_GAP, timeout=TASK_TIMEOUT_MS)
    assert "Hugging Face" in label.text() and label.isVisible()


def test_columns_give_the_model_name_the_width_on_a_laptop_screen(qtbot, tmp_path, hub, models_window):
    folder = tmp_path / "mine"
    build_dense(folder / TYPICAL_NAME, seed=0)
    window = models_window([folder])
    fit_to_screen(window, QSize(*DEFAULT_SIZE), LAPTOP_SCREEN)
    assert LAPTOP_SCREEN.width() - 40 <= window.width() <= LAPTOP_SCREEN.width()
    table = window.table
    key = str(folder / TYPICAL_NAME)
    assert window.table_model.find(key) is not None
    bold = QFont(table.font())
    bold.setBold(True)
    left, right = NAME_INSETS

    def name_whole() -> bool:
        room = table.columnWidth(NAME) - left - right
        return QFontMetrics(bold).elidedText(TYPICAL_NAME, Qt.TextElideMode.ElideRight, room) == TYPICAL_NAME

    qtbot.waitUntil(name_whole, timeout=TASK_TIMEOUT_MS)
    assert table.columnWidth(NAME) > table.columnWidth(PROGRESS)
    assert any(r.catalog is not None and r.catalog.quantization == OPTIQ for r in window.table_model.rows())
    quantization = max(table.fontMetrics().horizontalAdvance(OPTIQ) + 8, table.sizeHintForColumn(QUANTIZATION))
    assert table.columnWidth(QUANTIZATION) >= quantization, "the OptiQ quantization is cut"
    shown = sum(table.columnWidth(c) for c in range(window.table_model.columnCount()))
    assert shown <= table.viewport().width(), "the columns overflow: the table scrolls sideways"
    narrow = table.columnWidth(PROGRESS)
    downloading = row_key(DRAFT_REPO)
    window.table_model.set_transfer([downloading], Transfer(DOWNLOADING))
    qtbot.waitUntil(lambda: table.columnWidth(PROGRESS) > narrow + 60, timeout=TASK_TIMEOUT_MS)
    window.table_model.set_transfer([downloading], None)
    qtbot.waitUntil(lambda: table.columnWidth(PROGRESS) == narrow, timeout=TASK_TIMEOUT_MS)


@pytest.mark.parametrize("palette", [theme.LIGHT, theme.DARK], ids=["light", "dark"])
def test_primary_buttons_keep_white_text_readable(palette):
    """Send, Load, Download: white on the primary fill at >= 4.5:1 in both themes (the dark accent was 3.05:1)."""
    assert contrast(QColor(palette.primary_bg), QColor("white")) >= MIN_CONTRAST
    assert f"background: {palette.primary_bg}; color: white" in theme.style_sheet(palette)
