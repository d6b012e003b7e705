"""Auto K on the dashboard: acceptance by the drafter's confidence, early stops in the acceptance tile, and the
decode-speed chart's axes and plain-decode label; tiles keep short lines in a dock's usual widths."""

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPainter

from specchat.engine.events import Finished, GenerationStats, RoundResult
from specchat.system.memory import MemorySample
from specchat.system.power import PowerStatus
from specchat.ui.dashboard.confidence import CONFIDENCE_EMPTY

from .test_dashboard import GB, make_dashboard

WAIT_MS = 30_000
NBSP = "\xa0"


def auto_round(index, confidences, accepted, stop=None, emitted=None, seconds=0.02) -> RoundResult:
    """An auto K round that drafted one token per confidence; stop: the confidence where it stopped early."""
    drafted = len(confidences)
    return RoundResult(
        index,
        drafted,
        drafted,
        accepted,
        accepted + 1 if emitted is None else emitted,
        seconds / 2,
        seconds / 2,
        stopped_early=stop is not None,
        stop_confidence=stop,
        confidences=tuple(confidences),
    )


ROUNDS = [
    auto_round(0, (0.95, 0.85, 0.45), 1, stop=0.52),  # 0.95 accepted, 0.85 refused, 0.45 never checked
    auto_round(1, (0.92, 0.97), 2),  # both accepted
    auto_round(2, (0.41,), 0, stop=0.30),  # refused
    auto_round(3, (1.0, 0.05), 0),  # 1.0 (the top tenth) refused, 0.05 never checked
    RoundResult(4, 0, 0, 0, 3, 0.0, 0.02),  # a plain burst: nothing drafted
]


def drawn_labels(axis) -> list[str]:
    """The tick labels an axis draws now (pyqtgraph leaves out those that do not fit)."""
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        return [text for _, _, text in axis.generateDrawSpecs(painter)[2]]
    finally:
        painter.end()


def test_acceptance_by_confidence_bins_each_checked_draft_by_its_tenth(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.show()
    for event in ROUNDS:
        dash.on_event(event)
    dash.redraw()
    card = dash.acceptance
    assert card.plot.isVisibleTo(dash) and not card.confidence.widget.isVisibleTo(dash)  # by round first
    qtbot.mouseClick(card.switch.buttons[1], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: card.confidence.widget.isVisibleTo(dash), timeout=WAIT_MS)
    assert not card.plot.isVisibleTo(dash) and not card.empty.isVisibleTo(dash)
    bars = card.confidence.bar_item.opts
    # tenth 0.4: 1 checked, 0 accepted; 0.8: 1, 0; 0.9: 0.95, 0.92, 0.97 accepted and 1.0 refused
    assert list(bars["x"]) == pytest.approx([0.45, 0.85, 0.95])
    assert list(bars["height"]) == pytest.approx([0.0, 0.0, 75.0])
    assert [label.toPlainText() for label in card.confidence.labels] == ["1", "1", "4"]
    assert card.confidence.widget.toolTip().splitlines() == [
        "0.4–0.5: 0 of 1 draft accepted (0%)",
        "0.8–0.9: 0 of 1 draft accepted (0%)",
        "0.9–1.0: 3 of 4 drafts accepted (75%)",
    ]
    x, y = card.confidence.diagonal.getData()
    assert list(x) == [0, 1] and list(y) == [0, 100]  # a calibrated drafter: acceptance = confidence
    assert card.caption.text() == "6 checked drafts" and "calibrated" in card.legend.text()
    qtbot.mouseClick(card.switch.buttons[0], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: card.plot.isVisibleTo(dash), timeout=WAIT_MS)
    assert card.caption.text().startswith("mean ") and not card.confidence.widget.isVisibleTo(dash)


def test_fixed_k_rounds_have_no_confidence_and_say_where_it_comes_from(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.show()
    for index in range(3):
        dash.on_event(RoundResult(index, 3, 3, 2, 3, 0.01, 0.02))
    dash.acceptance.switch.choose(1)
    dash.redraw()
    card = dash.acceptance
    qtbot.waitUntil(lambda: card.empty.isVisibleTo(dash), timeout=WAIT_MS)
    assert card.empty.text() == CONFIDENCE_EMPTY and card.confidence.labels == []
    card.switch.choose(0)
    assert not card.empty.isVisibleTo(dash)  # the rounds themselves plot


def test_the_acceptance_tile_says_how_often_drafting_stopped_early(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    for event in ROUNDS:
        dash.on_event(event)
    dash.redraw()
    tile = dash.tiles["acceptance"]
    # 4 drafting rounds, 2 stopped early, at confidences 0.52 and 0.30: median 0.41
    assert tile.sub.text() == f"3{NBSP}of{NBSP}8{NBSP}drafted · 2/4{NBSP}stopped at{NBSP}0.41"
    assert "Drafts stopped early in 2 of 4 rounds (at confidence 0.41): the drafter was unsure" in tile.toolTip()
    stats = GenerationStats(generated_tokens=9, mode="draft", auto_k=True, rounds=5, drafted=8, accepted=3)
    dash.on_event(Finished((1,) * 9, "x", stats))
    dash.redraw()
    assert "2/4" in tile.sub.text()  # the finished reply's figure stays
    dash.on_event(RoundResult(0, 3, 3, 3, 4, 0.01, 0.02))  # a new reply with fixed K: nothing stopped early
    dash.redraw()
    assert tile.sub.text() == f"3{NBSP}of{NBSP}3{NBSP}drafted" and "Drafts stopped early" not in tile.toolTip()


def long_reply(dash, rounds: int = 46) -> None:
    """Rounds at about 150 tok/s with one that took far longer (near 0 tok/s), and a plain-decode reference."""
    for index in range(rounds):
        dash.on_event(auto_round(index, (0.9, 0.6), 1, seconds=5.0 if index == 20 else 0.02))
    dash.set_model("/models/target")
    dash.set_baseline_tps("/models/target", 60.0)
    dash.redraw()


def test_decode_speed_starts_at_zero_and_labels_the_last_round(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.resize(420, 900)
    dash.show()
    long_reply(dash)
    item = dash.throughput.plot.getPlotItem()
    qtbot.waitUntil(lambda: item.viewRange()[0][1] >= 45.5, timeout=WAIT_MS)  # the view reaches the last round
    low, high = item.viewRange()[1]
    assert low < 0 < high and -low < 0.1 * high  # a little below 0: the near-0 round shows whole
    left = item.getAxis("left")
    qtbot.waitUntil(lambda: "0" in drawn_labels(left), timeout=WAIT_MS)
    assert all(not label.startswith("-") for label in drawn_labels(left))
    bottom = item.getAxis("bottom")
    qtbot.waitUntil(lambda: {"1", "46"} <= set(drawn_labels(bottom)), timeout=WAIT_MS)
    assert all(1 <= int(label) <= 46 for label in drawn_labels(bottom))


def test_the_plain_decode_speed_is_in_the_legend_not_over_the_data(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    long_reply(dash)
    chart = dash.throughput
    assert f"plain decode 60.0{NBSP}tok/s" in chart.legend.text()
    assert chart.baseline_line.isVisible() and chart.baseline_line.value() == 60.0
    assert chart.baseline_line.label.textItem.toPlainText() == ""  # nothing written across the chart


def lines(label) -> int:
    """How many lines a word-wrapped label takes at its width."""
    return round(label.heightForWidth(label.width()) / label.fontMetrics().lineSpacing())


@pytest.mark.parametrize("width", [340, 420, 560])
def test_tiles_keep_one_line_titles_and_at_most_two_line_details(qtbot, paths, width):
    dash = make_dashboard(qtbot, paths)
    dash.resize(width, 900)
    dash.show()
    long_reply(dash)
    stats = GenerationStats(generated_tokens=90, decode_tokens_per_s=80.0, mode="lookup", auto_k=True, rounds=46)
    dash.on_event(Finished((1,) * 90, "x", stats))
    dash.on_memory(MemorySample(1_700_000_000.0, int(1.3 * GB), int(1.5 * GB), int(0.2 * GB), 0, 16 * 10**9, 9 * 10**9))
    dash.on_power(PowerStatus("ac", None, None, "No battery found"), None)
    dash.set_weights_bytes(int(0.08 * GB))
    dash.redraw()
    tiles = dash.tiles.values()
    qtbot.waitUntil(lambda: all(tile.sub.width() > 100 for tile in tiles), timeout=WAIT_MS)
    for tile in tiles:
        assert tile.title.sizeHint().width() <= tile.title.width(), tile.title.text()
        assert lines(tile.sub) <= 2, (tile.title.text(), tile.sub.text(), tile.sub.width())
    memory = dash.tiles["memory"].sub.text()
    assert "cache" not in memory and f"1.50{NBSP}GB" in memory and f"0.08{NBSP}GB" in memory
