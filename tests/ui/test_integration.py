"""The main window with the dashboard, sweep view, Models window, prompt lookup and Auto K wired in."""

import json

import pytest

from specchat.engine.events import RoundResult
from specchat.engine.owner import JobStarted
from specchat.settings import Settings, load_settings, save_settings, settings_from_dict
from specchat.tuning.baseline import BaselineCache
from specchat.tuning.best_k import save_best_k
from specchat.ui.speculation_menu import AUTO

# HF cache in tmp_path and a hub endpoint that does not answer: nothing reaches the internet.
from tests.hub.conftest import hub_env  # noqa: F401

from .conftest import LOAD_TIMEOUT_MS, REPLY_TIMEOUT_MS, screenshot, send

MEASURE_TIMEOUT_MS = 300_000


def wait_for_baseline(qtbot, window) -> float:
    """Wait for the plain-decode measurement the dashboard asks for after a load."""
    dash = window.docks.dashboard
    qtbot.waitUntil(
        lambda: dash.baseline_tps is not None and window.docks.measuring is None, timeout=MEASURE_TIMEOUT_MS
    )
    return dash.baseline_tps


def test_dashboard_gets_the_pair_a_baseline_and_every_round_of_a_reply(
    qtbot, open_window, paths, dense_target, dense_draft_partial
):
    window = open_window(dense_target, dense_draft_partial)
    dash, docks = window.docks.dashboard, window.docks
    assert not docks.dashboard_dock.isVisible()  # first start on a narrow screen (offscreen: 800 px)
    assert docks.dashboard_action.shortcut().toString() == "Ctrl+Shift+B"
    assert docks.sweep_action.shortcut().toString() == "Ctrl+Shift+K"
    window.resize(2000, 1040)  # room for the chat and the dashboard side by side
    docks.dashboard_action.trigger()
    assert docks.dashboard_dock.isVisible()
    assert dash.model_key == window.pair.target and dash.weights_bytes == window.pair.memory_bytes
    assert docks.sweep_view.pair is window.pair
    assert [docks.sweep_view.mode.itemData(i) for i in range(docks.sweep_view.mode.count())] == ["draft"]
    # the break-even line was measured on the engine thread and cached for this target
    tps = wait_for_baseline(qtbot, window)
    entry = BaselineCache.for_paths(paths).get(window.pair.target)
    assert entry is not None and entry.tokens_per_s == tps and entry.source == "measured"
    rounds = []
    window.client.event.connect(lambda _id, e: rounds.append(e) if isinstance(e, RoundResult) else None)
    finished = send(qtbot, window, "Count from one to twenty.")
    dash.redraw()
    assert finished.stats.mode == "draft" and len(rounds) == finished.stats.rounds > 0
    x, _ = dash.throughput.round_curve.getData()
    assert x.tolist() == [r.index for r in rounds]
    assert dash.rounds.totals()["accepted"] == finished.stats.accepted
    assert dash.throughput.baseline_line.isVisible() and dash.throughput.baseline_line.value() == tps
    # the dashboard has its own queued connection: its Finished may land just after the chat's
    qtbot.waitUntil(lambda: f"{finished.stats.generated_tokens} tokens" in dash.status.text())
    qtbot.wait(50)
    assert window.transcript.width() >= 380  # the dock takes its minimum width, the chat the rest
    path = screenshot(window, "main_window_dashboard")
    assert path.stat().st_size > 10_000
    # the docks' layout is saved with the window and comes back on the next start
    window.close()
    again = open_window(at=paths)
    assert again.docks.dashboard_dock.isVisible() and not again.docks.sweep_dock.isVisible()
    assert again.docks.dashboard.baseline_tps == tps  # cached: no second measurement needed


def test_a_first_start_on_a_wide_screen_shows_the_dashboard_beside_the_chat(qtbot, open_window, monkeypatch):
    from PySide6.QtCore import QRect

    from specchat.ui import analysis_docks, screen_fit

    monkeypatch.setattr(analysis_docks, "_screen", lambda _window: QRect(0, 0, 2560, 1440))
    monkeypatch.setattr(screen_fit, "available", lambda _window: QRect(0, 0, 2560, 1440))
    window = open_window()
    docks = window.docks
    assert docks.dashboard_dock.isVisible() and not docks.dashboard_dock.isFloating()
    assert not docks.sweep_dock.isVisible()
    assert window.width() >= docks.width_beside(docks.dashboard_dock)
    # the dock takes its minimum and half the room beyond the chat's minimum, never more than DOCK_WIDTH
    qtbot.waitUntil(lambda: docks.dashboard_dock.width() <= analysis_docks.DOCK_WIDTH + 2)
    qtbot.waitUntil(lambda: window.transcript.parentWidget().width() >= analysis_docks.CHAT_MIN)
    assert docks.dashboard.tiles["vs_plain"].sub.text() == "no model loaded"


@pytest.mark.slow
def test_real_model_with_prompt_lookup_and_auto_k_on_the_dashboard(qtbot, open_window, smollm_dir):
    window = open_window(smollm_dir)
    window.resize(2000, 1040)
    window.docks.dashboard_action.trigger()
    window.speculation.mode_actions["lookup"].trigger()
    window.speculation.auto_action.trigger()
    finished = send(qtbot, window, "Repeat this list twice: apple, banana, cherry, date.")
    assert finished.stats.mode == "lookup" and finished.stats.auto_k
    tps = wait_for_baseline(qtbot, window)
    dash = window.docks.dashboard
    dash.redraw()
    assert len(dash.rounds) == finished.stats.rounds and dash.throughput.baseline_line.value() == tps
    screenshot(window, "main_window_dashboard_real_model")


@pytest.mark.slow
def test_prompt_lookup_and_auto_k_chosen_in_the_menu_drive_the_next_reply(qtbot, open_window, paths, dense_target):
    window = open_window(dense_target)
    menu = window.speculation
    lookup = menu.mode_actions["lookup"]
    assert lookup.isEnabled() and lookup.shortcut().toString() == "Ctrl+3"
    assert not menu.mode_actions["draft"].isEnabled()
    lookup.trigger()
    menu.auto_action.trigger()
    assert window.mode_label.text() == "Speculation: Prompt lookup · K auto"
    finished = send(qtbot, window, "one two three one two three one two three one two")
    stats = finished.stats
    assert stats.mode == "lookup" and stats.auto_k and stats.rounds > 0
    footer = window.transcript.views[-1].footer.text()
    from dataclasses import asdict

    from specchat.engine.summary import speculation_text, stop_text

    assert f"Prompt lookup {speculation_text(asdict(stats))} · {stop_text(asdict(stats))}" in footer
    assert footer.startswith(f"{stats.generated_tokens} tokens") and "Prompt lookup K auto" in footer
    saved = load_settings(paths).settings
    assert (saved.mode, saved.num_draft_tokens) == ("lookup", AUTO)
    # a fixed K again: the next reply uses it
    menu.k_actions[2].trigger()
    second = send(qtbot, window, "again")
    assert (second.stats.mode, second.stats.auto_k, second.stats.num_draft_tokens) == ("lookup", False, 2)
    assert "Prompt lookup K=2" in window.transcript.views[-1].footer.text()
    assert load_settings(paths).settings.num_draft_tokens == 2


def test_lookup_and_auto_are_restored_on_the_next_start(qtbot, open_window, paths, dense_target):
    save_settings(paths, Settings(target_path=str(dense_target), mode="lookup", num_draft_tokens=AUTO))
    window = open_window(at=paths)
    assert window.speculation.checked_mode() == "lookup" and window.speculation.auto_action.isChecked()
    cfg, _ = window.reply_settings()
    assert (cfg.mode, cfg.num_draft_tokens) == ("lookup", AUTO)


@pytest.mark.slow
def test_mtp_history_switch_is_saved_used_and_restored(qtbot, open_window, paths, mtp_agree):
    window = open_window(mtp_agree)  # the switch applies to MTP only: a model with a head
    action = window.speculation.history_action
    assert not action.isChecked() and not window.reply_settings()[0].mtp_history
    action.trigger()
    assert window.reply_settings()[0].mtp_history
    assert load_settings(paths).settings.mtp_history is True
    window.close()
    again = open_window(at=paths)
    assert again.speculation.history_action.isChecked() and again.reply_settings()[0].mtp_history


def test_settings_round_trip_lookup_and_auto_and_still_refuse_bad_k(paths):
    settings = Settings(mode="lookup", num_draft_tokens="auto", window_state="AAAA")
    save_settings(paths, settings)
    data = json.loads(paths.settings_file.read_text())
    assert (data["mode"], data["num_draft_tokens"]) == ("lookup", "auto")
    assert load_settings(paths).settings == settings
    old_file = {"schema_version": 1, "mode": "draft", "num_draft_tokens": 3}  # written before these existed
    assert settings_from_dict(old_file) == Settings(mode="draft", num_draft_tokens=3)
    for bad in ("Auto", "automatic", 0, 17, True):
        with pytest.raises(ValueError, match="num_draft_tokens"):
            settings_from_dict({"num_draft_tokens": bad})


def test_a_load_sent_during_an_ab_comparison_waits_its_turn(qtbot, open_window, dense_target, dense_draft_partial):
    window = open_window(dense_target, dense_draft_partial)
    wait_for_baseline(qtbot, window)
    ab = window.docks.sweep_view.ab
    ab.max_tokens.setValue(6)
    started = []
    window.client.host.add_observer(lambda e: started.append(e.job.kind) if isinstance(e, JobStarted) else None)
    with qtbot.waitSignal(ab.compared, timeout=REPLY_TIMEOUT_MS):
        ab.run_button.click()
        assert window.composer.send_button.isEnabled() and window.model_bar.load_button.isEnabled()
        window.load_models(str(dense_target))  # no draft this time; queued behind the comparison
        assert window.banner.level == "" and window.pair.draft == str(dense_draft_partial)
    qtbot.waitUntil(lambda: window.pair.draft is None, timeout=LOAD_TIMEOUT_MS)
    assert started[:2] == ["ab", "load"] and [row.mode for row in ab.rows][:2] == ["baseline", "draft"]
    assert ab.rows[1].identical is True  # the comparison ran on the pair loaded when it was sent
    assert window.composer.send_button.isEnabled() and ab.run_button.isEnabled()


def test_saving_the_best_k_updates_the_speculation_menu(qtbot, open_window, paths, dense_target, dense_draft_partial):
    window = open_window(dense_target, dense_draft_partial)
    assert window.speculation.tuned_k is None
    best = {"structured": 5, "open": 5}
    save_best_k(paths, window.pair.target, window.pair.draft, best)
    window.docks.sweep_view.bestKSaved.emit(best)
    assert window.speculation.k_actions[5].text() == "5 (tuned for this pair)"
    assert window.speculation.current_k == 5 and load_settings(paths).settings.num_draft_tokens == 5


@pytest.mark.usefixtures("hub_env")
def test_models_window_opens_from_the_menu_and_its_choices_load(qtbot, open_window, dense_target, dense_draft_partial):
    window = open_window()
    assert window.models_action.shortcut().toString() == "Ctrl+Shift+M"
    window.models_action.trigger()
    models = window.models.window
    assert models is not None and models.isVisible()
    qtbot.waitUntil(lambda: not models.runner.busy, timeout=LOAD_TIMEOUT_MS)
    loads = []
    window.client.loadStarted.connect(loads.append)
    models.use_as_target.emit(str(dense_target))
    qtbot.waitUntil(lambda: window.pair is not None, timeout=LOAD_TIMEOUT_MS)
    assert window.model_bar.target_path() == str(dense_target) and window.pair.draft is None
    # "use pair" sends target then draft: one load with both
    models.use_as_target.emit(str(dense_target))
    models.use_as_draft.emit(str(dense_draft_partial))
    qtbot.waitUntil(
        lambda: window.pair is not None and window.pair.draft == str(dense_draft_partial), timeout=LOAD_TIMEOUT_MS
    )
    qtbot.wait(100)
    assert len(loads) == 2
    assert window.model_bar.draft_path() == str(dense_draft_partial)
    assert window.speculation.checked_mode() == "draft"
    assert window.models.open() is models  # the same window again, not a second one
    window.close()
    assert models.closed


def test_use_best_off_switches_speculation_off(qtbot, open_window, paths, dense_target, dense_draft_partial):
    window = open_window(dense_target, dense_draft_partial)
    assert window.speculation.checked_mode() == "draft"
    best = {"chat": 0, "code": 3}  # the sweep found no K faster than plain decoding for chat
    save_best_k(paths, window.pair.target, window.pair.draft, best)
    window.docks.sweep_view.bestKSaved.emit(best)
    assert window.speculation.tuned_k == 0 and window.speculation.checked_mode() == "baseline"
    assert window.speculation.mode_actions["baseline"].text() == "Off (tuned for this pair)"
    assert load_settings(paths).settings.mode == "baseline" and 0 not in window.speculation.k_actions
