"""The sweep view on the tiny hybrid pair: table and chart filled, best K saved, exports, cancel, A/B."""

import csv
import json
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from specchat.engine.config import AUTO_MAX_DRAFT_TOKENS
from specchat.engine.owner import EngineHost, LoadedPair, load_pair_job
from specchat.system.power import PowerStatus
from specchat.tuning.best_k import best_choices
from specchat.tuning.sweep import parse_ks
from specchat.tuning.sweep_results import AUTO, RunRecord, summarize_cell
from specchat.ui.dashboard import SweepView
from specchat.ui.dashboard.sweep_table import DIFFERS_BG, NOISY_BG
from specchat.ui.engine_client import EngineClient
from specchat.ui.plain_words import NO_MTP_HEAD

from .conftest import screenshot

AC = PowerStatus("ac", None, None, "test: mains")
BATTERY = PowerStatus("battery", 30.0, False, "test: battery 30%")
MACHINE = {"chip": "Test Chip", "memory_total": "1 GB", "os": "TestOS"}
SWEEP_TIMEOUT_MS = 180_000


def row_texts(table, row: int) -> list[str]:
    """The texts of one row of the sweep table, as a reader sees them."""
    return [table.item(row, c).text() for c in range(table.columnCount())]


@pytest.fixture(scope="module")
def loaded(hybrid_target, hybrid_draft_partial):
    """An engine host with the hybrid pair loaded, shared by the module's views, and the pair."""
    host = EngineHost()
    pair = host.submit("load", load_pair_job(hybrid_target, hybrid_draft_partial)).result(120)
    yield host, pair
    host.shutdown()


def make_view(qtbot, paths, loaded, power=AC, ks="1,2", warmup=0, max_tokens=6):
    host, pair = loaded
    view = SweepView(
        paths, read_power=lambda: power, machine_info=lambda: dict(MACHINE), client=EngineClient(host=host)
    )
    qtbot.addWidget(view)
    view.resize(1280, 880)
    view.set_pair(pair)
    view.reps.setValue(1)
    view.warmup.setValue(warmup)
    view.max_tokens.setValue(max_tokens)
    view.ks_edit.setText(ks)
    return view


def run_sweep(qtbot, view):
    with qtbot.waitSignal(view.sweepFinished, timeout=SWEEP_TIMEOUT_MS) as finished:
        assert view.start()
    qtbot.waitUntil(lambda: view.job is None, timeout=300_000)
    return finished.args[0]


@pytest.mark.slow
def test_sweep_fills_table_chart_saves_best_k_and_exports(qtbot, paths, loaded, tmp_path):
    view = make_view(qtbot, paths, loaded, warmup=1)
    busy = []
    view.busyChanged.connect(busy.append)
    result = run_sweep(qtbot, view)
    assert busy == [True, False] and not result.cancelled
    assert [p.name for p in result.prompts] == ["structured", "open"]
    cells = [(p.name, c) for p in result.prompts for c in p.cells]
    assert len(cells) == view.table.rowCount() == 2 * 4
    assert [c.k for p in result.prompts for c in p.cells] == [None, 1, 2, AUTO] * 2
    for row, (name, cell) in enumerate(cells):
        texts = row_texts(view.table, row)
        assert texts[:2] == [name, cell.label]
        assert texts[2] == (f"{cell.median_tokens_per_s:.1f}" if cell.median_tokens_per_s is not None else "—")
        assert len(cell.reps) == 1 and len(cell.warmups) == 1
        assert cell.identical is True  # greedy on a partial draft: the identity gate holds
    for prompt in result.prompts:
        heights = view.chart.bars[prompt.name].opts["height"]
        assert list(heights) == pytest.approx([c.speedup_pct for c in prompt.cells if c.k is not None])
        assert len(heights) == 3  # K=1, K=2 and auto K's own bar
    ticks = view.chart.plot.getPlotItem().getAxis("bottom")._tickLevels[0]
    assert [text for _, text in ticks] == ["K=1", "K=2", "auto"]
    auto_row = [c.k for _, c in cells].index(AUTO)
    assert row_texts(view.table, auto_row)[1] == "dynamic (auto K)"
    assert (
        f"at most {AUTO_MAX_DRAFT_TOKENS} tokens a round: the engine's default max"
        in view.table.item(auto_row, 1).toolTip()
    )
    assert view.progress.value() == view.progress.maximum() == 2 * 4 * 2
    best = result.best_k()
    assert set(best) == {"structured", "open"} and view.use_best.isEnabled()
    with qtbot.waitSignal(view.bestKSaved) as saved:
        view.use_best.click()
    assert saved.args == [best]
    assert best_choices(paths, result.target, result.drafter) == best
    stars = {None: "★ best: Off", AUTO: "★ best: auto K"}
    for prompt in result.prompts:  # the best row (plain decoding when the best is Off) is bold and says so
        choice = best[prompt.name] or None
        row = [n for n, _ in cells].index(prompt.name) + [c.k for c in prompt.cells].index(choice)
        assert row_texts(view.table, row)[-1].startswith(stars.get(choice, "★ best K"))
        assert view.table.item(row, 0).font().bold()
    assert all(row_texts(view.table, row)[6] == "n/a" for row in range(len(cells)))  # 1 rep: no CV
    assert "MAD" in view.table.horizontalHeaderItem(6).toolTip()
    csv_rows = list(csv.DictReader(view.export_csv(tmp_path / "sweep.csv").open()))
    assert [(r["prompt"], r["k"]) for r in csv_rows] == [(n, "auto" if c.k == AUTO else c.label) for n, c in cells]
    assert [r["best"] for r in csv_rows].count("True") == 2
    assert [r["max_k"] for r in csv_rows if r["k"] == "auto"] == [str(AUTO_MAX_DRAFT_TOKENS)] * 2
    data = json.loads(view.export_json(tmp_path / "sweep.json").read_text())
    assert data["best_k"] == best and [c["k"] for c in data["prompts"][0]["cells"]] == [None, 1, 2, "auto"]
    image = QImage(str(view.export_png(tmp_path / "chart.png")))
    assert image.width() > 100 and image.height() > 100


def test_noisy_and_differing_cells_are_marked(qtbot, paths, loaded):
    view = make_view(qtbot, paths, loaded)

    def run(tps, identical=True, mismatch=None):
        return RunRecord(0, False, tps, 8, 0.1, 3, 6, 3, 1000, "length", "ac", "", identical, mismatch)

    base = summarize_cell(None, [run(100.0), run(101.0), run(99.0)], [], None, "ac")
    noisy = summarize_cell(1, [run(120.0), run(160.0), run(90.0)], [], base, "ac")
    differs = summarize_cell(2, [run(150.0, False, 5)], [], base, "ac")
    view.ks = (1, 2)
    view.cells = {"structured": [base, noisy, differs]}
    view._show_cells()
    assert noisy.noisy and differs.identical is False
    assert view.table.item(1, 6).background().color() == NOISY_BG and "noisy" in row_texts(view.table, 1)[-1]
    assert view.table.item(2, 2).background().color() == DIFFERS_BG
    assert row_texts(view.table, 2)[2] == "—" and "output differs" in row_texts(view.table, 2)[-1]
    marked = view.chart.markers["structured"].data
    assert len(marked) == 1 and marked["y"][0] == 0.0


def test_cancel_keeps_a_partial_result(qtbot, paths, loaded):
    calls = []

    def power_then_cancel():
        calls.append(1)
        if len(calls) == 3:  # the check, run 1, then run 2 starts: cancel it (on the engine thread)
            view.job.handle.cancel.set()
        return AC

    view = make_view(qtbot, paths, loaded, power=AC, ks="1,2,4", max_tokens=8)
    view.read_power = power_then_cancel
    result = run_sweep(qtbot, view)
    assert result.cancelled and view.progress.value() == 1 < view.progress.maximum()
    assert [len(p.cells) for p in result.prompts] == [1]  # only the baseline cell measured anything
    assert view.table.rowCount() == 1 and row_texts(view.table, 0)[1] == "baseline"
    assert view.best_label.text().startswith("Cancelled") and view.run_button.isEnabled()


def test_battery_and_bad_settings_are_refused_with_a_message(qtbot, paths, loaded):
    view = make_view(qtbot, paths, loaded, power=BATTERY)
    assert view.start()
    qtbot.waitUntil(lambda: view.job is None and view.banner.level == "error", timeout=SWEEP_TIMEOUT_MS)
    assert "battery" in view.banner.message and view.result is None
    view.ks_edit.setText("0,x")
    assert not view.start()
    assert "draft tokens must be whole numbers" in view.banner.message
    with pytest.raises(Exception, match="between 1 and 16, got 0"):
        parse_ks("0")
    with pytest.raises(Exception, match="between 1 and 16, got 17"):
        parse_ks("4,17")
    assert parse_ks("4, 2,4") == (4, 2)


def test_nothing_to_sweep_without_a_drafter(qtbot, paths, loaded):
    view = SweepView(paths, client=EngineClient(host=loaded[0]))
    qtbot.addWidget(view)
    modes = {"baseline": None, "draft": "no draft model loaded", "mtp": "no MTP head: none", "lookup": None}
    view.set_pair(LoadedPair("target", None, modes, str))
    assert view.mode.count() == 0 and not view.run_button.isEnabled()
    assert "draft model or an MTP head" in view.progress_label.text()


@pytest.mark.slow
def test_ab_panel_compares_off_draft_mtp_and_lookup_then_screenshot(qtbot, paths, loaded):
    view = make_view(qtbot, paths, loaded, ks="1,2,4")
    view.show()
    run_sweep(qtbot, view)
    panel = view.ab
    panel.max_tokens.setValue(10)
    panel.k.setValue(3)
    with qtbot.waitSignal(panel.compared, timeout=SWEEP_TIMEOUT_MS) as compared:
        panel.run_button.click()
    qtbot.waitUntil(lambda: panel.job is None, timeout=300_000)
    rows = {r.mode: r for r in compared.args[0]}
    assert rows["baseline"].tokens_per_s > 0 and rows["baseline"].generated_tokens == 10
    assert rows["draft"].identical is True and rows["draft"].text == rows["baseline"].text
    assert 0 <= rows["draft"].acceptance_rate <= 1
    assert rows["mtp"].unavailable and "MTP" in rows["mtp"].unavailable
    assert "identical output: yes" in panel.cards["draft"].identical.text()
    assert panel.cards["mtp"].speed.text() == "n/a"
    # the MTP card says why in the words the Speculation menu uses; the technical reason is its tooltip
    assert panel.cards["mtp"].detail.text() == f"Not available: {NO_MTP_HEAD}."
    assert panel.cards["mtp"].detail.toolTip() and "MTP" not in panel.cards["mtp"].detail.text()
    assert rows["lookup"].identical is True and rows["lookup"].text == rows["baseline"].text  # prompt lookup too
    assert [r.mode for r in compared.args[0]] == ["baseline", "draft", "mtp", "lookup", "dflash"]
    first = next(line.strip() for line in rows["baseline"].text.splitlines() if line.strip())
    assert panel.cards["baseline"].output.text() == f"“{first}”"  # Off's output, its first line
    assert panel.cards["draft"].output.text() == panel.cards["lookup"].output.text() == "same output as Off"
    assert panel.cards["mtp"].output.text() == ""
    qtbot.wait(50)
    screenshot(view, "sweep_view")


def test_a_slower_k_makes_off_the_best_and_chart_axes_carry_plain_units(qtbot, paths, loaded):
    view = make_view(qtbot, paths, loaded)

    def run(tps):
        return RunRecord(0, False, tps, 8, 0.1, 3, 6, 3, 1000, "length", "ac", "", True, None)

    base = summarize_cell(None, [run(100.0), run(100.5), run(99.5)], [], None, "ac")
    slower = summarize_cell(1, [run(99.0), run(98.0), run(98.5)], [], base, "ac")
    view.ks = (1,)
    view.cells = {"chat": [base, slower]}
    view._show_cells()  # no result yet: nothing is marked best
    assert not any(row_texts(view.table, r)[-1].startswith("★") for r in range(2))
    from specchat.tuning.sweep_results import PromptResult

    assert PromptResult("chat", "", 1, "", (base, slower)).best_choice() == 0
    item = view.chart.plot.getPlotItem()
    for name in ("left", "bottom"):
        assert not item.getAxis(name).autoSIPrefix
    view.chart.show_cells([("chat", [base, slower])], (1,))
    assert "x0.001" not in item.getAxis("left").labelString()


def test_ab_cards_show_the_first_line_of_each_output_or_that_it_is_offs(qtbot):
    from specchat.tuning.ab_compare import AB_MODES, MODE_TITLES, ABRow
    from specchat.ui.dashboard.ab_panel import ABCard, output_line

    assert "lookup" in AB_MODES and MODE_TITLES["lookup"] == "Prompt lookup"
    off = ABRow("baseline", None, 10.0, None, None, 8, True, None, "\n  def merge(a, b):\n    ...")
    same = ABRow("lookup", None, 14.0, 0.5, 1.0, 8, True, None, off.text)
    other = ABRow("draft", None, 12.0, 0.5, 1.0, 8, None, None, "Sure!\nHere it is")
    assert output_line(off, off) == ("“def merge(a, b):”", off.text.strip())
    assert output_line(same, off)[0] == "same output as Off"
    assert output_line(other, off)[0] == "“Sure!”"
    assert output_line(ABRow("mtp", unavailable="no head"), off) == ("", "")
    card = ABCard("lookup")
    qtbot.addWidget(card)
    card.show_row(same, off)
    assert card.output.text() == "same output as Off" and "def merge" in card.output.toolTip()
    assert card.title.text() == "Prompt lookup"
    card.show_row(None)
    assert card.output.text() == ""


def test_ab_card_says_acceptance_dash_when_nothing_was_drafted_and_explains_its_figures(qtbot):
    from specchat.tuning.ab_compare import ABRow
    from specchat.ui.dashboard.ab_panel import ABCard

    card = ABCard("draft")
    qtbot.addWidget(card)
    card.show_row(ABRow("draft", None, 12.5, None, None, 10, True, None, "x"))
    assert card.detail.text() == "10 tokens · acceptance —" and card.speed.text() == "12.5 tok/s"
    assert "engine's clock" in card.speed.toolTip() and "drafted" in card.detail.toolTip()


def test_the_view_is_narrow_enough_to_sit_beside_the_chat_and_shows_every_control_whole(qtbot, paths, loaded):
    view = make_view(qtbot, paths, loaded, ks="1,2,4,8")
    assert view.minimumSizeHint().width() <= 340  # beside a 480 px chat and both side columns on a 1280 px screen
    view.resize(340, 700)
    view.show()
    qtbot.waitUntil(lambda: view.ks_edit.width() > 0)
    content = view.scroller.widget()
    qtbot.waitUntil(lambda: content.width() <= view.scroller.viewport().width(), timeout=30_000)
    # the K field shows its whole text; the controls wrap onto lines instead of leaving the view
    edit = view.ks_edit
    assert edit.fontMetrics().horizontalAdvance(edit.text()) < edit.width() - 8
    for widget in (view.run_button, view.cancel_button, view.allow_battery, view.ab.run_button, *view.exports):
        right = widget.mapTo(content, widget.rect().topRight()).x()
        assert right <= content.width(), f"{widget.text()!r} ends at {right} of {content.width()}"
        assert widget.width() >= widget.sizeHint().width(), widget.text()
    cards = [card.mapTo(content, card.rect().topRight()).x() for card in view.ab.cards.values()]
    assert max(cards) <= content.width()  # the A/B cards stack when three do not fit


def test_the_sweep_controls_are_the_same_after_a_restart(qtbot, open_window, paths):
    window = open_window()
    sweep = window.docks.sweep_view
    sweep.ks_edit.setText("2,3")
    sweep.ks_edit.editingFinished.emit()
    sweep.reps.setValue(5)
    sweep.max_tokens.setValue(64)
    list(sweep.prompt_boxes.values())[0].setChecked(False)
    sweep.allow_battery.setChecked(True)
    wanted = sweep.controls()
    window.close()
    again = open_window(at=paths).docks.sweep_view
    assert again.controls() == wanted
    assert again.ks_edit.text() == "2,3" and again.reps.value() == 5 and again.allow_battery.isChecked()


def test_saved_sweep_controls_of_the_wrong_type_are_left_at_their_defaults(qtbot, paths):
    view = SweepView(paths)
    qtbot.addWidget(view)
    defaults = view.controls()
    view.set_controls({"ks": 4, "reps": "many", "warmup": 99, "max_tokens": True, "prompts": ["nope"], "mode": 1})
    assert view.controls() == defaults


@pytest.mark.slow
def test_an_export_is_named_after_the_pair_mode_and_day(qtbot, paths, loaded):
    from specchat.ui.dashboard.sweep_export import export_name

    view = make_view(qtbot, paths, loaded)
    result = run_sweep(qtbot, view)
    name = export_name(result, "csv")
    assert name == f"sweep {Path(result.target).name} draft {result.started_at[:10]}.csv"
    assert export_name(None, "png") == "sweep.png"


def test_the_progress_line_names_the_power_source_in_words(qtbot, paths, loaded):
    from specchat.tuning.sweep_results import SweepStarted

    view = make_view(qtbot, paths, loaded)
    view._sweep_event(SweepStarted(12, ("chat",), (1, 2), "ac"))
    assert view.progress_label.text() == "12 runs ahead, on mains power"


def auto_result(target: str, drafter: str):
    """A finished sweep of one prompt where auto K beats plain decoding and K=2 beyond the noise."""
    from specchat.tuning.sweep_results import PromptResult, SweepResult

    def run(tps):
        return RunRecord(0, False, tps, 8, 0.1, 3, 6, 3, 1000, "length", "ac", "", True, None)

    base = summarize_cell(None, [run(100.0), run(101.0), run(99.0)], [], None, "ac")
    k2 = summarize_cell(2, [run(110.0), run(111.0), run(109.0)], [], base, "ac")
    auto = summarize_cell(AUTO, [run(130.0), run(131.0), run(129.0)], [], base, "ac", max_k=8)
    prompt = PromptResult("chat", "Hi", 3, "Hello", (base, k2, auto))
    settings = {"ks": [2], "reps": 3, "warmup": 0, "max_tokens": 8, "temperature": 0.0, "dynamic": True}
    return SweepResult(target, drafter, "draft", settings, MACHINE, {"source": "ac"}, "2026-01-01", (prompt,))


def test_use_best_k_saves_auto_where_auto_k_wins(qtbot, paths, tmp_path):
    view = SweepView(paths)
    qtbot.addWidget(view)
    result = auto_result(str(tmp_path / "target"), str(tmp_path / "draft"))
    view.show_result(result)
    assert view.best_label.text() == "Best K: chat auto K" and view.use_best.isEnabled()
    assert row_texts(view.table, 2)[1] == "dynamic (auto K)" and row_texts(view.table, 2)[-1].startswith(
        "★ best: auto K"
    )
    assert view.table.item(2, 0).font().bold() and "fastest fixed K" in view.table.item(2, 8).toolTip()
    assert list(view.chart.bars["chat"].opts["height"]) == pytest.approx([10.0, 30.0])
    with qtbot.waitSignal(view.bestKSaved, timeout=30_000) as saved:
        view.use_best.click()
    assert saved.args == [{"chat": "auto"}]
    assert best_choices(paths, result.target, result.drafter) == {"chat": "auto"}
    assert "chat auto K" in view.best_label.text()


def test_the_dynamic_switch_sits_with_the_prompts_and_is_remembered(qtbot, paths):
    view = SweepView(paths)
    qtbot.addWidget(view)
    assert view.dynamic.isChecked() and view.dynamic.text() == "dynamic"
    assert view.dynamic.parentWidget() is list(view.prompt_boxes.values())[0].parentWidget()
    assert view.config().dynamic is True and view.controls()["dynamic"] is True
    with qtbot.waitSignal(view.controlsChanged, timeout=30_000) as changed:
        view.dynamic.setChecked(False)
    assert changed.args[0]["dynamic"] is False and view.config().dynamic is False
    again = SweepView(paths)
    qtbot.addWidget(again)
    again.set_controls(changed.args[0])
    assert not again.dynamic.isChecked()
    again.set_controls({"dynamic": "yes"})  # the wrong type: left as it was
    assert not again.dynamic.isChecked()


def test_an_old_sweep_without_the_auto_cell_shows_as_before(qtbot, paths, tmp_path):
    from specchat.tuning.sweep_report import read_json, to_json

    result = auto_result("t", "d")
    data = json.loads(json.dumps(to_json(result)))
    data["prompts"][0]["cells"] = data["prompts"][0]["cells"][:2]
    for cell in data["prompts"][0]["cells"]:
        del cell["max_k"]
    del data["settings"]["dynamic"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    view = SweepView(paths)
    qtbot.addWidget(view)
    view.show_result(read_json(tmp_path / "old.json"))
    assert view.table.rowCount() == 2 and view.best_label.text() == "Best K: chat K=2"
    ticks = view.chart.plot.getPlotItem().getAxis("bottom")._tickLevels[0]
    assert [text for _, text in ticks] == ["K=2"]


def _cell(k, speedup, notes_heavy=False):
    from specchat.tuning.sweep_results import CellResult

    power = ("ac", "battery") if notes_heavy else ("ac",)
    cv = 0.09 if notes_heavy else 0.02
    return CellResult(k, 30.0, 30.0, cv, notes_heavy, speedup, 0.6, 1.2, 10**9, 0, True, None, power, notes_heavy, ())


def test_the_sweep_chart_does_not_zoom_refits_each_sweep_and_shows_its_axis_labels_whole(qtbot):
    from specchat.ui.dashboard.sweep_table import SpeedupChart

    chart = SpeedupChart()
    qtbot.addWidget(chart)
    item = chart.plot.getPlotItem()
    assert item.getViewBox().state["mouseEnabled"] == [False, False]  # the wheel cannot zoom it
    chart.show_cells([("code", [_cell(None, 0.0), _cell(1, 35.0), _cell(4, 120.0)])], (1, 4))
    chart.show()
    chart.resize(chart.minimumSizeHint())
    item.setYRange(0, 10, padding=0)  # as a zoom left it
    chart.show_cells([("story", [_cell(None, 0.0), _cell(1, -60.0), _cell(4, 300.0)])], (1, 4))
    low, high = item.viewRange()[1]
    assert low <= -60 and high >= 300  # re-fitted to the new bars
    qtbot.waitUntil(lambda: item.getAxis("left").geometry().height() > 0)
    left, bottom = item.getAxis("left"), item.getAxis("bottom")
    assert left.label.boundingRect().width() <= left.geometry().height()  # the upright label fits its axis
    label_bottom = bottom.geometry().top() + bottom.label.mapRectToParent(bottom.label.boundingRect()).bottom()
    assert label_bottom <= chart.plot.height()  # and the bottom one is not cut off under the plot


def test_the_sweep_tables_notes_column_is_never_cut_to_the_room_left(qtbot):
    from specchat.ui.dashboard.sweep_table import COLUMNS, SweepTable

    table = SweepTable()
    qtbot.addWidget(table)
    table.resize(560, 250)
    table.show()
    table.show_cells([("story", [_cell(None, 0.0, notes_heavy=True), _cell(1, 5.0)])], {"story": 0})
    last, header = len(COLUMNS) - 1, table.horizontalHeader()
    assert header.sectionSize(last) >= table.sizeHintForColumn(last) > 100  # the table scrolls instead
    table.resize(2000, 250)
    qtbot.waitUntil(lambda: header.stretchLastSection())  # room to spare: Notes takes it
    assert header.sectionSize(last) >= table.sizeHintForColumn(last)
