"""The dashboard: a recorded engine stream plotted exactly, the power banner, the baseline cache, empty state."""

import json

import numpy as np
import pytest

from specchat.engine import Engine, GenerationConfig
from specchat.engine.events import Finished, GenerationStats, RoundResult, TextChunk
from specchat.system.memory import MemorySample
from specchat.system.power import PowerStatus
from specchat.tuning.baseline import BaselineCache
from specchat.ui.dashboard import Dashboard
from specchat.ui.dashboard.poller import SystemPoller
from specchat.ui.dashboard.tiles import DASH

from .conftest import screenshot

AC = PowerStatus("ac", 100.0, False, "AC Power, battery 100% (charged)")
BATTERY = PowerStatus("battery", 40.0, False, "Battery Power, battery 40% (discharging)")
GB = 1e9
WINDOW = 8


@pytest.fixture(scope="module")
def recorded_stream(hybrid_target, hybrid_draft_partial):
    """Every event of one draft-mode generation on the tiny hybrid pair."""
    engine = Engine.load(hybrid_target, hybrid_draft_partial)
    ids = engine.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Count to ten."}], add_generation_prompt=True, enable_thinking=False
    )
    events = list(engine.stream(ids, GenerationConfig("draft", 3, max_tokens=40)))
    assert isinstance(events[-1], Finished) and events[-1].stats.rounds >= 5
    return events


class FakeMemory:
    """MemorySamples one second apart with a growing MLX footprint."""

    def __init__(self):
        self.count = 0

    def __call__(self) -> MemorySample:
        self.count += 1
        n = self.count
        return MemorySample(
            1_700_000_000.0 + n,
            int((1.0 + 0.1 * n) * GB),
            int((1.5 + 0.1 * n) * GB),
            int(0.2 * GB),
            int(2.5 * GB),
            int(16 * GB),
            int((9.0 - 0.05 * n) * GB),
        )


def make_dashboard(qtbot, paths, power=AC, low_power=False, redraw_ms=100_000, memory=None):
    poller = SystemPoller(
        read_memory=memory or FakeMemory(),
        read_power=lambda: power,
        read_low_power=lambda: low_power,
        memory_interval_ms=100_000,
        power_interval_ms=100_000,
    )
    dash = Dashboard(paths, poller=poller, redraw_interval_ms=redraw_ms, start_polling=False)
    qtbot.addWidget(dash)
    dash.resize(1280, 800)
    return dash


def points(curve) -> int:
    """How many points a curve holds now."""
    x = curve.getData()[0]
    return 0 if x is None else len(x)


def feed(dash, events):
    for event in events:
        dash.on_event(event)


def by_hand(rounds):
    """Per-round and rolling tok/s, per-round and cumulative acceptance, worked out independently."""
    emitted = [r.emitted for r in rounds]
    seconds = [r.draft_s + r.verify_s for r in rounds]
    per_round = [e / s for e, s in zip(emitted, seconds)]
    rolling = [
        sum(emitted[max(0, i - WINDOW + 1) : i + 1]) / sum(seconds[max(0, i - WINDOW + 1) : i + 1])
        for i in range(len(rounds))
    ]
    acceptance = [100 * r.accepted / r.drafted for r in rounds]
    cumulative = [
        100 * sum(r.accepted for r in rounds[: i + 1]) / sum(r.drafted for r in rounds[: i + 1])
        for i in range(len(rounds))
    ]
    return per_round, rolling, acceptance, cumulative


def test_plotted_data_equals_the_stream_and_its_stats(qtbot, paths, recorded_stream):
    dash = make_dashboard(qtbot, paths)
    rounds = [e for e in recorded_stream if isinstance(e, RoundResult)]
    stats = recorded_stream[-1].stats
    feed(dash, recorded_stream)
    dash.redraw()
    per_round, rolling, acceptance, cumulative = by_hand(rounds)
    x, y = dash.throughput.round_curve.getData()
    assert x.tolist() == [r.index for r in rounds] and y.tolist() == pytest.approx(per_round)
    assert dash.throughput.rolling_curve.getData()[1].tolist() == pytest.approx(rolling)
    edges, heights = dash.acceptance.round_curve.getData()
    assert heights.tolist() == pytest.approx(acceptance)
    assert edges.tolist() == pytest.approx([r.index - 0.4 for r in rounds] + [rounds[-1].index + 0.4])
    x, y = dash.acceptance.cumulative_curve.getData()
    assert y.tolist() == pytest.approx(cumulative)
    # the last cumulative point and the tiles agree with the engine's own stats
    assert (len(rounds), sum(r.accepted for r in rounds)) == (stats.rounds, stats.accepted)
    assert y[-1] == pytest.approx(100 * stats.acceptance_rate)
    assert dash.tiles["acceptance"].value.text() == f"{100 * stats.acceptance_rate:.0f}%"
    assert dash.tiles["per_round"].value.text() == f"{stats.mean_accepted_per_round:.2f}"
    assert dash.acceptance.caption.text() == f"mean {stats.mean_accepted_per_round:.2f} accepted / round"
    # after the reply the headline speed is the reply's decode speed, and the text stays readable
    assert dash.tiles["speed"].value.text() == f"{stats.decode_tokens_per_s:.1f} tok/s"
    assert f"{stats.generated_tokens} tokens" in dash.status.text() and "K=3" in dash.status.text()
    assert not dash.throughput.empty.isVisibleTo(dash)


def test_round_axes_tick_whole_rounds_only(qtbot, paths, recorded_stream):
    dash = make_dashboard(qtbot, paths)
    feed(dash, [e for e in recorded_stream if isinstance(e, RoundResult)][:4])
    dash.show()
    dash.redraw()
    for card in (dash.throughput, dash.acceptance):
        item = card.plot.getPlotItem()
        qtbot.waitUntil(lambda: item.viewRange()[0][1] > 2.5)  # the view follows the data when it paints
        low, high = item.viewRange()[0]
        assert low < 0.5 and high < 4  # rounds 0..3: pyqtgraph alone would tick 0.5, 1.5, ...
        axis = item.getAxis("bottom")
        ticks = [v for _, values in axis.tickValues(low, high, axis.width()) for v in values]
        assert ticks and all(v == round(v) for v in ticks), ticks


def test_charts_redraw_on_the_timer_not_per_event(qtbot, paths, recorded_stream):
    dash = make_dashboard(qtbot, paths, redraw_ms=100_000)
    feed(dash, recorded_stream)
    assert len(dash.rounds) > 0 and points(dash.throughput.round_curve) == 0
    dash.redraw_timer.setInterval(20)
    qtbot.waitUntil(lambda: points(dash.throughput.round_curve) == len(dash.rounds), timeout=30_000)


def test_a_new_generation_starts_fresh_rounds(qtbot, paths, recorded_stream):
    dash = make_dashboard(qtbot, paths)
    feed(dash, recorded_stream)
    feed(dash, recorded_stream)
    dash.redraw()
    rounds = [e for e in recorded_stream if isinstance(e, RoundResult)]
    assert len(dash.throughput.round_curve.getData()[0]) == len(rounds)
    assert dash.rounds.totals()["accepted"] == recorded_stream[-1].stats.accepted


def test_empty_state_is_readable(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.show()
    dash.redraw()
    assert dash.throughput.empty.isVisibleTo(dash) and "No speculative rounds" in dash.throughput.empty.text()
    assert dash.acceptance.empty.isVisibleTo(dash)
    assert dash.memory_chart.empty.text() == "Reading memory…" and dash.memory_chart.empty.isVisibleTo(dash)
    assert dash.tiles["speed"].value.text() == DASH and dash.tiles["acceptance"].value.text() == DASH
    assert dash.tiles["vs_plain"].sub.text() == "no model loaded"
    assert dash.status.text() == "No generation yet." and not dash.banner.isVisibleTo(dash)
    qtbot.wait(50)  # let the layout settle before the grab
    screenshot(dash, "dashboard_empty")


def test_plain_decoding_reply_says_it_has_no_rounds(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.show()
    stats = GenerationStats(generated_tokens=8, decode_tokens_per_s=25.0, mode="baseline", stop_reason="length")
    feed(dash, [TextChunk("hi", (1,), (False,)), Finished((1,) * 8, "hi", stats)])
    dash.redraw()
    assert dash.throughput.empty.text() == "Plain decoding has no speculative rounds."
    assert dash.tiles["speed"].value.text() == "25.0 tok/s"


def test_battery_and_low_power_banner(qtbot, paths):
    state = {"power": BATTERY, "low": False}
    poller = SystemPoller(
        read_memory=FakeMemory(),
        read_power=lambda: state["power"],
        read_low_power=lambda: state["low"],
        memory_interval_ms=100_000,
        power_interval_ms=100_000,
    )
    dash = Dashboard(paths, poller=poller, redraw_interval_ms=100_000, start_polling=False)
    qtbot.addWidget(dash)
    dash.show()
    with qtbot.waitSignal(poller.powerRead, timeout=30_000):
        poller.request_power()
    assert dash.banner.isVisible() and dash.banner.level == "warning"
    assert "battery" in dash.banner.message and "40%" in dash.banner.message
    assert "not comparable" in dash.banner.message
    dash.redraw()  # tiles, like charts, change on the redraw timer
    assert dash.tiles["power"].value.text() == "Battery 40%"
    state.update(power=AC, low=True)
    with qtbot.waitSignal(poller.powerRead, timeout=30_000):
        poller.request_power()
    assert dash.banner.isVisible() and dash.banner.message.startswith("Low-power mode is on")
    state.update(low=False)
    with qtbot.waitSignal(poller.powerRead, timeout=30_000):
        poller.request_power()
    assert not dash.banner.isVisible()
    dash.redraw()
    t, mains = dash.power_chart.ac_curve.getData()
    assert np.nan_to_num(mains).tolist() == [0.0, 100.0, 100.0]  # first reading was on battery
    assert np.nan_to_num(dash.power_chart.battery_curve.getData()[1]).tolist() == [40.0, 0.0, 0.0]
    dash.stop()


def test_desktop_without_battery_says_so(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.show()
    dash.on_power(PowerStatus("ac", None, None, "No battery found; assuming mains power"), None)
    dash.redraw()
    assert dash.power_chart.empty.text() == "No battery: on mains power."
    assert dash.tiles["power"].value.text() == "Mains"


def test_memory_over_time_and_weights_marked(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    assert not dash.memory_chart.weights_line.isVisible()
    for _ in range(3):
        dash.poller.sample_memory()
    dash.set_weights_bytes(int(1.2 * GB))
    dash.redraw()
    t, active = dash.memory_chart.curves["active"].getData()
    assert t.tolist() == [1_700_000_001.0, 1_700_000_002.0, 1_700_000_003.0]
    assert active.tolist() == pytest.approx([1.1, 1.2, 1.3])
    assert dash.memory_chart.curves["peak"].getData()[1].tolist() == pytest.approx([1.6, 1.7, 1.8])
    assert dash.memory_chart.curves["available"].getData()[1].tolist() == pytest.approx([8.95, 8.9, 8.85])
    assert dash.memory_chart.weights_line.value() == pytest.approx(1.2)
    assert dash.memory_chart.weights_line.isVisible()
    memory = dash.tiles["memory"]
    # a number keeps its unit when the line wraps; the buffer cache is in the tooltip
    assert memory.value.text() == "1.30 GB" and memory.sub.text() == "peak\xa01.80\xa0GB · weights\xa01.20\xa0GB"
    assert "MLX buffer cache 0.20 GB" in memory.toolTip()


def test_charts_over_time_show_the_last_minute_until_they_span_more(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.show()
    item = dash.memory_chart.plot.getPlotItem()
    first, last = 1_700_000_001.0, 1_700_000_003.0
    for _ in range(3):  # 2 s of readings: a minute of clock times, newest at the right
        dash.poller.sample_memory()
    dash.redraw()
    qtbot.waitUntil(lambda: item.viewRange()[0][1] >= last)
    low, high = item.viewRange()[0]
    assert low <= last - 60 and high < last + 3
    for _ in range(70):  # 72 s of readings: all of them
        dash.poller.sample_memory()
    dash.redraw()
    qtbot.waitUntil(lambda: item.viewRange()[0][1] >= first + 71)
    low, high = item.viewRange()[0]
    assert first - 5 < low <= first


def test_baseline_is_requested_cached_and_remeasurable(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    assert not dash.throughput.baseline_line.isVisible()
    with qtbot.waitSignal(dash.baselineRequested) as asked:
        dash.set_model("/models/target-a")
    assert asked.args == ["/models/target-a"]
    dash.set_baseline_tps("/models/target-a", 12.5)
    dash.redraw()
    assert dash.throughput.baseline_line.value() == 12.5 and dash.throughput.baseline_line.isVisible()
    saved = json.loads((paths.data_dir / "baseline_tps.json").read_text())
    assert saved["models"]["/models/target-a"]["tokens_per_s"] == 12.5
    # a second dashboard (the next app start) reads the cache and asks for nothing
    again = make_dashboard(qtbot, paths)
    with qtbot.assertNotEmitted(again.baselineRequested):
        again.set_model("/models/target-a")
    assert again.baseline_tps == 12.5 and again.remeasure.text() == "Re-measure plain decode"
    with qtbot.waitSignal(again.baselineRequested) as asked:
        again.remeasure.click()
    assert asked.args == ["/models/target-a"]


def test_a_long_plain_reply_becomes_the_reference_of_the_next(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.set_model("/models/b")
    stats = GenerationStats(generated_tokens=40, decode_tokens_per_s=31.0, mode="baseline", prompt_tokens=20)
    dash.on_event(Finished((1,) * 40, "x", stats))
    assert dash.baseline_tps is None  # a reply is never its own reference
    assert BaselineCache.for_paths(paths).get("/models/b").source == "plain-decode reply"
    dash.on_event(
        Finished(
            (1,) * 40,
            "x",
            GenerationStats(generated_tokens=40, decode_tokens_per_s=29.0, mode="baseline", prompt_tokens=20),
        )
    )
    assert dash.baseline_tps == 31.0  # the other plain reply
    dash.on_event(
        Finished(
            (1,) * 40,
            "x",
            GenerationStats(generated_tokens=40, decode_tokens_per_s=45.0, mode="draft", prompt_tokens=20),
        )
    )
    assert dash.baseline_tps == 30.0  # both plain replies


def test_vs_plain_tile_and_screenshot(qtbot, paths, recorded_stream):
    dash = make_dashboard(qtbot, paths, power=BATTERY, low_power=True)
    dash.show()
    dash.set_model("/models/tiny-hybrid")
    stats = recorded_stream[-1].stats
    dash.set_baseline_tps("/models/tiny-hybrid", stats.decode_tokens_per_s / 1.25)
    dash.set_weights_bytes(int(1.6 * GB))
    for _ in range(12):
        dash.poller.sample_memory()
    with qtbot.waitSignal(dash.poller.powerRead, timeout=30_000):
        dash.poller.request_power()
    feed(dash, recorded_stream)
    dash.redraw()
    assert dash.tiles["vs_plain"].value.text() == "1.25×"
    assert dash.banner.isVisible()
    qtbot.wait(50)
    screenshot(dash, "dashboard")


def test_mlx_memory_keeps_its_own_scale_beside_system_memory(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.show()
    for _ in range(3):  # MLX peaks at 1.8 GB while the machine has about 9 GB available
        dash.poller.sample_memory()
    dash.set_weights_bytes(int(1.2 * GB))
    dash.redraw()
    chart = dash.memory_chart
    low, high = chart.plot.getPlotItem().getViewBox().viewRange()[1]
    assert low == 0 and 1.8 < high <= 1.8 * 1.25  # the MLX lines fill the left axis
    assert chart.curves["available"] in chart.system_view.addedItems  # system memory: the right axis
    assert chart.plot.getPlotItem().getAxis("right").linkedView() is chart.system_view
    assert 8.95 < chart.system_view.viewRange()[1][1] <= 8.95 * 1.25


def test_plain_decode_line_and_its_label_stay_inside_the_chart(qtbot, paths, recorded_stream):
    dash = make_dashboard(qtbot, paths)
    feed(dash, recorded_stream)
    fastest = float(np.nanmax(dash.rounds.tokens_per_s()))
    dash.set_model("/models/target")
    dash.set_baseline_tps("/models/target", fastest * 2)  # plain decoding far above every round
    assert dash.baseline_tps == fastest * 2
    dash.redraw()
    top = dash.throughput.plot.getPlotItem().getViewBox().viewRange()[1][1]
    assert top >= fastest * 2 * 1.15  # room above the line for its label


def test_without_a_battery_power_is_one_line_below_the_charts(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.show()
    dash.on_power(PowerStatus("ac", None, None, "No battery found; assuming mains power"), None)
    dash.redraw()
    qtbot.wait(20)
    power = dash.power_chart
    assert power.compact and power not in dash.charts.cards and not power.plot.isVisibleTo(dash)
    assert power.height() < 40 and power.note.isVisibleTo(dash)
    dash.on_power(BATTERY, False)  # a battery: its percent is worth a chart
    dash.redraw()
    assert not power.compact and power in dash.charts.cards and power.plot.isVisibleTo(dash)


def test_the_dashboard_reflows_from_wide_to_a_narrow_dock(qtbot, paths):
    dash = make_dashboard(qtbot, paths)  # 1280 x 800
    dash.show()
    qtbot.waitUntil(lambda: dash.charts.mode == "grid")
    assert dash.tile_grid.columns == 6
    least = dash.minimumSizeHint()
    assert least.width() <= 340 and least.height() <= 640  # fits beside the chat on a 1280 x 800 screen
    dash.resize(least.width(), 700)
    qtbot.waitUntil(lambda: dash.charts.mode == "tabs")
    assert dash.tile_grid.columns == 2 and dash.charts.tabs.count() == len(dash.charts.cards)
    qtbot.waitUntil(lambda: len({tile.y() for tile in dash.tiles.values()}) == 3)  # six tiles, three rows
    tiles = list(dash.tiles.values())
    assert all(tile.width() >= 150 and tile.height() >= tile.minimumHeight() for tile in tiles)
    assert not [(a, b) for a in tiles for b in tiles if a is not b and a.geometry().intersects(b.geometry())]
    screenshot(dash, "dashboard_narrow")


def test_a_short_dock_scrolls_the_dashboard_rather_than_squeezing_it(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.show()
    dash.resize(dash.minimumSizeHint().width(), 300)  # shorter than the tiles and one chart
    qtbot.waitUntil(lambda: dash.scroll.verticalScrollBar().isVisible())
    assert dash.minimumSizeHint().height() < 300  # the dock never asks the window for more height
    tiles = list(dash.tiles.values())
    qtbot.waitUntil(lambda: all(tile.height() >= tile.minimumHeight() for tile in tiles))
    assert not [(a, b) for a in tiles for b in tiles if a is not b and a.geometry().intersects(b.geometry())]
    assert dash.charts.height() >= dash.charts.minimumSizeHint().height()
