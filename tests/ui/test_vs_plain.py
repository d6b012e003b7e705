"""'vs plain decode' divides by this session's plain replies of the same target, coloured by its noise band."""

from specchat.engine.events import Finished, GenerationStats
from specchat.tuning.reference import FASTER, SLOWER
from specchat.ui.dashboard.tiles import VERDICT_COLORS

from .test_dashboard import AC, BATTERY, make_dashboard

KEY = "/models/target-a"


def reply(dash, tps: float, mode: str = "baseline", tokens: int = 64, context: int = 40, cancelled=False):
    stats = GenerationStats(
        generated_tokens=tokens,
        decode_tokens_per_s=tps,
        mode=mode,
        prompt_tokens=context,
        stop_reason="cancelled" if cancelled else "length",
        max_tokens=tokens,
    )
    dash.on_event(Finished((1,) * tokens, "x", stats, cancelled))
    dash.redraw()


def tile(dash):
    t = dash.tiles["vs_plain"]
    return t.value.text(), t.sub.text(), t.value.styleSheet()


def test_the_baseline_shown_is_the_one_measured_in_this_session_for_this_pair(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.on_power(AC, False)
    dash.set_model(KEY)
    dash.set_baseline_tps(KEY, 9.2)  # the load-time measurement: faster than the session's plain replies
    dash.redraw()
    assert tile(dash)[1] == "plain decode 9.2 tok/s, measured, just now"
    for tps in (5.2, 5.3, 5.4):
        reply(dash, tps)
    reply(dash, 7.3, mode="draft")
    value, sub, style = tile(dash)
    assert dash.baseline_tps == 5.3 and dash.throughput.baseline_line.value() == 5.3
    assert (value, sub) == (f"{7.3 / 5.3:.2f}×", "plain decode 5.3 tok/s, 3 plain replies this session, just now")
    assert VERDICT_COLORS[FASTER] in style
    assert "same target" in dash.tiles["vs_plain"].toolTip()
    assert all(tile.toolTip() for tile in dash.tiles.values())
    assert "rolling mean" in dash.throughput.title.toolTip() and "GB" in dash.memory_chart.title.toolTip()
    # another target: nothing of the first one is shown for it
    dash.set_model("/models/target-b")
    dash.redraw()
    assert tile(dash)[:2] == ("—", "plain decode not measured") and dash.baseline_tps is None


def test_a_plain_reply_at_098_is_grey_and_a_slow_draft_reply_is_red(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.on_power(AC, False)
    dash.set_model(KEY)
    reply(dash, 10.0)
    reply(dash, 9.8)  # compared with the other plain reply only
    assert tile(dash)[0] == "0.98×" and tile(dash)[2] == ""
    reply(dash, 8.0, mode="draft")  # 8.0 / 9.9 = 0.81: the band 0.77..0.85 is all below 1
    assert tile(dash)[0] == "0.81×" and VERDICT_COLORS[SLOWER] in tile(dash)[2]
    reply(dash, 10.2, mode="draft")  # 1.03: within the 5% band
    assert tile(dash)[0] == "1.03×" and tile(dash)[2] == ""


def test_a_stale_reference_says_why_and_offers_re_measuring(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    now = [1_000_000.0]
    dash.plain.clock = lambda: now[0]
    dash.on_power(BATTERY, False)
    dash.set_model(KEY)
    reply(dash, 5.0)
    dash.on_power(AC, False)  # plugged in since
    reply(dash, 8.0, mode="draft")
    value, sub, style = tile(dash)
    assert value == "1.60×" and style == ""  # stale: no verdict colour
    assert sub.startswith("stale: measured on battery; now on mains power · plain decode 5.0 tok/s")
    assert dash.remeasure.text() == "Re-measure plain decode (stale)"
    with qtbot.waitSignal(dash.baselineRequested) as asked:
        dash.remeasure.click()
    assert asked.args == [KEY]
    dash.set_baseline_tps(KEY, 6.0)  # the new measurement, on mains
    dash.redraw()
    assert tile(dash)[1] == "plain decode 6.0 tok/s, measured, just now"
    assert dash.remeasure.text() == "Re-measure plain decode"
    now[0] += 45 * 60
    dash.redraw()
    assert tile(dash)[1] == (
        "stale (older than 30 min): plain decode 6.0 tok/s, measured, 45 min ago"  # the age said once
    )


def test_other_sampling_settings_make_the_session_replies_stale(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.on_power(AC, False)
    dash.set_model(KEY)
    reply(dash, 5.0)  # greedy
    stats = GenerationStats(
        generated_tokens=64, decode_tokens_per_s=6.0, mode="draft", prompt_tokens=40, sampling="T=0.7"
    )
    dash.on_event(Finished((1,) * 64, "x", stats))
    dash.redraw()
    assert tile(dash)[1].startswith("stale: measured with greedy sampling; this reply used T=0.7")


def test_an_auto_k_reply_tells_plain_bursts_from_drafting_rounds(qtbot, paths):
    from dataclasses import replace

    from specchat.engine.events import RoundResult

    dash = make_dashboard(qtbot, paths)
    rounds = [RoundResult(0, 0, 0, 0, 150, 0.0, 1.0)] + [RoundResult(i, 2, 2, 2, 3, 0.1, 0.1) for i in (1, 2, 3, 4)]
    rounds.append(RoundResult(5, 2, 2, 0, 1, 0.1, 0.1))
    for r in rounds:
        dash.on_event(r)
    stats = replace(
        GenerationStats(),
        generated_tokens=163,
        decode_tokens_per_s=9.0,
        mode="draft",
        auto_k=True,
        num_draft_tokens=8,
        rounds=6,
        drafted=10,
        accepted=8,
        acceptance_rate=0.8,
        mean_k=2.0,
        mean_accepted_per_round=1.6,
        plain_tokens=150,
        speculative_tokens=13,
        k_rounds={2: 5},
        stop_reason="length",
        max_tokens=163,
    )
    dash.on_event(Finished((1,) * 163, "x", stats))
    dash.redraw()
    assert dash.status.text() == (
        "Last chat reply: Draft model, K auto: plain decoding for 92% of tokens, K=2 for the "
        "rest; 80% of drafted tokens accepted · 163 tokens · 9.0 tok/s decode · "
        "max tokens (163)"
    )
    assert dash.tiles["per_round"].value.text() == "1.60"
    assert dash.tiles["per_round"].sub.text() == "over 5 drafting rounds (+1 plain)"
    assert dash.tiles["acceptance"].value.text() == "80%"


def test_the_edge_shows_a_verdict_only_and_a_plain_reply_gets_none(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    dash.on_power(AC, False)
    dash.redraw()
    vs_plain = dash.tiles["vs_plain"]
    assert vs_plain.accent is None and vs_plain.sub.text() == "no model loaded"  # no red edge for nothing
    dash.set_model(KEY)
    dash.set_baseline_tps(KEY, 8.0)
    reply(dash, 10.1)  # a plain reply faster than the measurement: still plain decoding
    value, sub, style = tile(dash)
    assert value == f"{10.1 / 8.0:.2f}×" and style == "" and vs_plain.accent is None
    assert sub.startswith("speculation off: plain decoding against plain decoding; plain decode 8.0 tok/s")
    reply(dash, 16.0, mode="draft")
    assert tile(dash)[2] == f"color: {VERDICT_COLORS[FASTER]};" and vs_plain.accent == VERDICT_COLORS[FASTER]
    reply(dash, 4.0, mode="draft")
    assert vs_plain.accent == VERDICT_COLORS[SLOWER]
