"""The Suite tab on the tiny dense pair: a run fills the category x drafter table, the chart and the
recommendation, is kept per pair and shown again; a cancelled run is not kept. And the recommendation's rules."""

import json

import pytest

from specchat.engine.owner import EngineHost, load_pair_job
from specchat.ui.dashboard import SweepView
from specchat.ui.dashboard.suite_summary import ALL, grid, labels, picks, recommendation, report_files
from specchat.ui.dashboard.suite_table import cell_text
from specchat.ui.dashboard.suite_view import SuiteView
from specchat.ui.engine_client import EngineClient

from .conftest import screenshot

SUITE_TIMEOUT_MS = 300_000
CATEGORIES = ["doc_summary", "code_edit"]


@pytest.fixture(scope="module")
def loaded(dense_target, dense_draft_partial):
    """An engine host with the dense pair loaded, and the pair."""
    host = EngineHost()
    pair = host.submit("load", load_pair_job(dense_target, dense_draft_partial)).result(120)
    yield host, pair
    host.shutdown()


def make_view(qtbot, paths, loaded) -> SuiteView:
    host, pair = loaded
    view = SuiteView(paths, client=EngineClient(host=host))
    qtbot.addWidget(view)
    view.resize(1100, 800)
    view.categories = CATEGORIES
    view.per_category.setValue(1)
    view.max_tokens.setValue(8)
    view.set_pair(pair)
    return view


def table_texts(table) -> list[list[str]]:
    return [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(table.rowCount())]


@pytest.mark.slow
def test_a_suite_run_fills_the_table_chart_and_advice_and_is_kept_for_the_pair(qtbot, paths, loaded):
    view = make_view(qtbot, paths, loaded)
    assert view.report is None and view.run_button.isEnabled()
    with qtbot.waitSignal(view.suiteFinished, timeout=SUITE_TIMEOUT_MS) as finished:
        assert view.start()
    qtbot.waitUntil(lambda: view.job is None, timeout=SUITE_TIMEOUT_MS)
    report = finished.args[0]
    assert not report["cancelled"] and report["exact"]
    assert [c["name"] for c in report["categories"]] == CATEGORIES
    columns = labels(report)
    assert columns[0] == "plain" and {"draft fixed K", "draft auto K", "auto fixed K", "auto auto K"} <= set(columns)
    rows = grid(report)
    assert list(rows) == [*CATEGORIES, ALL]
    assert [view.table.verticalHeaderItem(r).text() for r in range(view.table.rowCount())] == list(rows)
    assert [view.table.horizontalHeaderItem(c).text() for c in range(view.table.columnCount())] == columns
    for r, cells in enumerate(rows.values()):
        for c, label in enumerate(columns):
            assert view.table.item(r, c).text() == cell_text(label, cells[label])
    draft = rows[ALL]["draft fixed K"]
    assert view.table.item(2, columns.index("draft fixed K")).text() == (
        f"{draft.vs_plain:.2f}× · {draft.acceptance * 100:.0f}%"
    )
    assert len(view.chart.bars) == len(columns) - 1  # one bar series per drafter cell
    heights = view.chart.bars[0].opts["height"]
    assert list(heights) == [rows[name][columns[1]].vs_plain for name in rows]
    assert view.advice.text() == recommendation(report)

    json_file, markdown_file = report_files(paths, loaded[1].target, loaded[1].draft)
    assert json.loads(json_file.read_text()) == json.loads(json.dumps(report))
    assert markdown_file.read_text().startswith("## Suite: ")
    assert str(json_file) in view.saved_label.text()
    screenshot(view, "suite-view")

    # another view on the same pair (the next app start) shows the kept report
    again = make_view(qtbot, paths, loaded)
    assert table_texts(again.table) == table_texts(view.table)
    assert again.advice.text() == view.advice.text()


@pytest.mark.slow
def test_a_cancelled_suite_shows_its_partial_tables_and_is_not_kept(qtbot, paths, loaded):
    view = make_view(qtbot, paths, loaded)
    view.progress.valueChanged.connect(lambda done: view.cancel() if done >= 1 else None)
    with qtbot.waitSignal(view.suiteFinished, timeout=SUITE_TIMEOUT_MS) as finished:
        assert view.start()
    qtbot.waitUntil(lambda: view.job is None, timeout=SUITE_TIMEOUT_MS)
    assert finished.args[0]["cancelled"]
    assert view.progress_label.text() == "Cancelled: partial tables, not kept."
    assert not report_files(paths, loaded[1].target, loaded[1].draft)[0].exists()
    assert view.run_button.isEnabled() and not view.cancel_button.isEnabled()


def test_the_sweep_window_has_the_suite_tab_for_the_loaded_pair(qtbot, paths, loaded):
    host, pair = loaded
    sweep = SweepView(paths, client=EngineClient(host=host))
    qtbot.addWidget(sweep)
    sweep.set_pair(pair)
    assert [sweep.tabs.tabText(i) for i in range(sweep.tabs.count())] == ["K sweep and A/B", "Suite"]
    assert sweep.suite.pair is pair and sweep.suite.run_button.isEnabled()


def cell(label: str, vs_plain: float | None, acceptance: float | None = 0.5, exact: bool = True) -> dict:
    return {"label": label, "vs_plain": vs_plain, "acceptance": acceptance, "tokens_per_s": 10.0, "exact": exact}


def report_of(categories: dict[str, list[dict]], overall: list[dict], unavailable=None) -> dict:
    return {
        "categories": [{"name": name, "cells": cells} for name, cells in categories.items()],
        "overall": overall,
        "unavailable": unavailable or {},
    }


def test_the_recommendation_picks_the_fastest_exact_drafter_per_category_and_says_whether_auto_is_best():
    plain = cell("plain", None, None)
    report = report_of(
        {
            "coding": [plain, cell("draft fixed K", 1.5), cell("auto auto K", 1.8)],
            "writing": [plain, cell("draft fixed K", 0.9), cell("auto auto K", 0.8)],
            "math": [plain, cell("draft fixed K", 1.3), cell("auto auto K", 2.5, exact=False)],
        },
        [plain, cell("draft fixed K", 1.2), cell("auto auto K", 1.25)],
    )
    chosen = picks(report)
    assert [(p.category, p.label, p.auto_best) for p in chosen] == [
        ("coding", "auto auto K", True),
        ("writing", "plain", False),  # nothing beat plain decoding
        ("math", "draft fixed K", False),  # Auto's faster output differed: not a speed
        (ALL, "auto auto K", True),
    ]
    assert recommendation(report) == (
        "Use per category: coding: auto auto K (1.80× plain); writing: plain decoding (no drafter beat it); "
        "math: draft fixed K (1.30× plain). Over all categories: auto auto K (1.25× plain). "
        "Auto is the best choice overall (auto auto K), and the fastest in 1 of 3 categories."
    )
    no_auto = report_of({"coding": [plain, cell("draft fixed K", 1.5)]}, [plain, cell("draft fixed K", 1.5)])
    assert recommendation(no_auto).endswith("Auto has no figures in this report.")
    skipped = report_of({"coding": [plain]}, [plain], {"auto": "no draft model loaded"})
    assert recommendation(skipped).endswith("Auto was not run: no draft model loaded.")
