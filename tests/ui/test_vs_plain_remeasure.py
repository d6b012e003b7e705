"""A re-measured plain-decode speed is the reference at once; a stale reference says its age once, in a tile
as tall as the others."""

from specchat.engine.events import Finished, GenerationStats

from .test_dashboard import AC, make_dashboard
from .test_vs_plain import KEY, reply, tile


def test_a_re_measured_plain_decode_is_used_at_once(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.on_power(AC, False)
    dash.set_model(KEY)
    for tps in (5.2, 5.3, 5.4):  # plain replies: the session's reference, 5.3
        reply(dash, tps)
    reply(dash, 7.3, mode="draft")
    assert dash.baseline_tps == 5.3
    with qtbot.waitSignal(dash.baselineRequested):
        dash.remeasure.click()
    dash.set_baseline_tps(KEY, 8.0)  # Re-measure plain decode: saved, and the reference from now on
    dash.redraw()
    assert dash.baseline_tps == 8.0 and dash.throughput.baseline_line.value() == 8.0
    assert tile(dash)[:2] == (f"{7.3 / 8.0:.2f}×", "plain decode 8.0 tok/s, measured, just now")
    again = make_dashboard(qtbot, paths)  # the next start reads the same figure
    again.on_power(AC, False)
    again.set_model(KEY)
    assert again.baseline_tps == 8.0
    reply(dash, 7.9)  # a plain reply after the measurement: compared with the measurement ...
    assert dash.baseline_tps == 8.0
    reply(dash, 9.0, mode="draft")  # ... and the reference of the next reply
    assert dash.baseline_tps == 7.9


def test_a_stale_reference_says_its_age_once_and_keeps_the_tiles_height(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.show()
    now = [1_000_000.0]
    dash.plain.clock = lambda: now[0]
    dash.on_power(AC, False)
    dash.set_model(KEY)
    dash.set_baseline_tps(KEY, 6.0)
    reply(dash, 8.0, mode="draft")
    qtbot.wait(10)
    heights = [t.height() for t in dash.tiles.values()]
    grid = dash.tile_grid.height()
    now[0] += 30 * 60 + 60  # 31 min later
    dash.on_event(Finished((1,) * 64, "x", GenerationStats(generated_tokens=64, decode_tokens_per_s=8.0, mode="draft")))
    dash.redraw()
    qtbot.wait(10)
    vs_plain = dash.tiles["vs_plain"]
    sub = vs_plain.sub.text()
    assert sub == "stale (older than 30 min): plain decode 6.0 tok/s, measured, 31 min ago"
    assert sub.count("min ago") == 1 and "31 min ago" in vs_plain.toolTip()
    assert [t.height() for t in dash.tiles.values()] == heights and dash.tile_grid.height() == grid
    assert len({t.height() for t in dash.tiles.values()}) == 1
    dash.resize(360, 800)  # a narrow dock: the detail is elided on its last line, never taller
    qtbot.wait(10)
    shown = vs_plain.sub.shown_lines()
    assert len(shown) <= 2 and vs_plain.sub.is_elided() and shown[-1].endswith("…")
    assert len({t.height() for t in dash.tiles.values()}) == 1 and vs_plain.height() == heights[0]
