"""The Suite tab's category picker: it counts what is chosen, a run covers only the chosen categories, Run
waits for at least one, the choice comes back after a restart; and the tab fits the dock beside the chat."""

import pytest

from specchat.tuning.suite_data import BUILTIN_WHAT
from specchat.ui.dashboard import SweepView
from specchat.ui.dashboard.suite_categories import picker_text
from specchat.ui.dashboard.suite_summary import ALL, grid
from specchat.ui.dashboard.suite_view import NO_CATEGORY, SuiteView

from .conftest import screenshot
from .test_suite_view import SUITE_TIMEOUT_MS, cell, loaded, make_view, report_of  # noqa: F401 (loaded: a fixture)

BUILTIN = list(BUILTIN_WHAT)


def tick(view: SuiteView, name: str) -> None:
    """Click a category's entry in the picker's menu."""
    view.picker.actions_[name].trigger()


def test_the_picker_offers_every_category_and_counts_the_chosen_ones(qtbot, paths):
    view = SuiteView(paths)
    qtbot.addWidget(view)
    assert view.picker.names() == BUILTIN  # no `specchat suite` run has cached MT-Bench or HumanEval here
    assert view.picker.text() == f"Categories: all ({len(BUILTIN)})" and view.categories is None
    tick(view, "doc_qa")
    assert view.picker.text() == f"Categories: {len(BUILTIN) - 1} of {len(BUILTIN)}"
    assert view.categories == [name for name in BUILTIN if name != "doc_qa"]
    view.categories = ["doc_extract", "doc_summary"]
    assert view.categories == ["doc_summary", "doc_extract"]  # in the suite's order
    assert view.picker.text() == f"Categories: 2 of {len(BUILTIN)}"
    assert picker_text(0, 5) == "Categories: none" and picker_text(6, 6) == "Categories: all (6)"


@pytest.mark.slow
def test_run_waits_for_a_category_and_a_run_covers_only_the_chosen_ones(qtbot, paths, loaded):  # noqa: F811
    view = make_view(qtbot, paths, loaded)
    view.picker.menu_.actions()[1].trigger()  # None
    assert view.picker.chosen() == [] and view.picker.text() == "Categories: none"
    assert not view.run_button.isEnabled() and view.run_button.toolTip() == NO_CATEGORY
    assert not view.start() and view.banner.shown() == [("warning", NO_CATEGORY)] and view.job is None
    tick(view, "doc_qa")
    assert view.run_button.isEnabled() and view.run_button.toolTip() == ""
    with qtbot.waitSignal(view.suiteFinished, timeout=SUITE_TIMEOUT_MS) as finished:
        assert view.start()
    qtbot.waitUntil(lambda: view.job is None, timeout=SUITE_TIMEOUT_MS)
    report = finished.args[0]
    assert [c["name"] for c in report["categories"]] == ["doc_qa"]
    assert list(grid(report)) == ["doc_qa", ALL]
    assert [view.table.verticalHeaderItem(r).text() for r in range(view.table.rowCount())] == ["doc_qa", ALL]


def test_the_suite_controls_come_back_after_a_restart(qtbot, open_window, paths):
    window = open_window()
    suite = window.docks.sweep_view.suite
    tick(suite, "code_edit")
    tick(suite, "doc_translate")
    suite.per_category.setValue(3)
    suite.max_tokens.setValue(64)
    suite.fixed_k.setValue(2)
    wanted = suite.controls()
    assert wanted["categories"] == ["doc_summary", "doc_qa", "doc_extract"]
    window.close()
    again = open_window(at=paths).docks.sweep_view.suite
    assert again.controls() == wanted
    assert again.picker.text() == f"Categories: 3 of {len(BUILTIN)}" and again.per_category.value() == 3
    assert again.categories == ["doc_summary", "doc_qa", "doc_extract"]


@pytest.mark.parametrize(
    "saved",
    [
        {"categories": "doc_qa", "per_category": "many", "max_tokens": True, "fixed_k": 999},
        {"categories": ["gone_since"], "per_category": 0},
        {"categories": [1, 2]},
    ],
)
def test_saved_suite_controls_that_do_not_fit_are_left_at_their_defaults(qtbot, paths, saved):
    view = SuiteView(paths)
    qtbot.addWidget(view)
    defaults = view.controls()
    view.set_controls(saved)
    assert view.controls() == defaults


def test_a_saved_choice_of_none_comes_back_as_none_and_run_says_why(qtbot, paths):
    view = SuiteView(paths)
    qtbot.addWidget(view)
    view.set_controls({"categories": []})
    assert view.picker.text() == "Categories: none" and view.run_button.toolTip() == NO_CATEGORY


def finished_report() -> dict:
    """A report with every built-in category and the six cells a draft pair runs."""
    plain = cell("plain", None, None)
    labels = ["draft fixed K", "draft auto K", "lookup fixed K", "lookup auto K", "auto fixed K", "auto auto K"]
    cells = [plain] + [cell(label, 0.8 + 0.1 * i) for i, label in enumerate(labels)]
    return report_of({name: cells for name in BUILTIN}, cells)


def test_the_suite_tab_fits_the_dock_beside_the_chat(qtbot, paths):
    sweep = SweepView(paths)
    qtbot.addWidget(sweep)
    width = sweep.minimumSizeHint().width()
    assert width <= 340  # the dock's width beside a 480 px chat and both side columns in a 1280 px window
    sweep.tabs.setCurrentWidget(sweep.suite)
    suite = sweep.suite
    suite.categories = ["doc_summary", "code_edit", "doc_extract"]
    suite.show_report(finished_report())
    sweep.resize(width, 700)
    sweep.show()
    content = suite.scroller.widget()
    assert content is not None
    qtbot.waitUntil(
        lambda: content.width() > 0 and content.width() <= suite.scroller.viewport().width(), timeout=30_000
    )
    assert suite.scroller.horizontalScrollBar().maximum() == 0  # the view itself never scrolls sideways
    for widget in (
        suite.picker,
        suite.per_category,
        suite.max_tokens,
        suite.fixed_k,
        suite.cancel_button,
        suite.run_button,
    ):
        right = widget.mapTo(content, widget.rect().topRight()).x()
        assert right <= content.width(), (
            f"{widget.objectName() or widget.text()!r} ends at {right} of {content.width()}"
        )
        assert widget.width() >= widget.sizeHint().width(), widget
    table_right = suite.table.mapTo(content, suite.table.rect().topRight()).x()
    assert table_right <= content.width()  # the table scrolls inside itself
    assert suite.table.horizontalScrollBar().maximum() > 0
    screenshot(sweep, "suite-view-narrow")
