"""One owner: every MLX job waits its turn on the engine queue; a failed load keeps the pair in use."""

import json

import pytest

from specchat.engine.owner import JobFinished, JobStarted
from specchat.settings import load_settings
from specchat.system.power import PowerStatus

from .conftest import LOAD_TIMEOUT_MS, REPLY_TIMEOUT_MS, send

AC = PowerStatus("ac", None, None, "test: mains")


def broken_model_folder(tmp_path):
    """A folder that looks like a model (config.json, weights file) but that mlx-lm cannot load."""
    folder = tmp_path / "broken-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "no_such_architecture"}))
    (folder / "model.safetensors").write_bytes(b"")
    return folder


def test_a_failed_load_keeps_the_pair_in_use_and_the_settings(
    qtbot, open_window, paths, tmp_path, dense_target, dense_draft_partial
):
    window = open_window(dense_target)
    first = window.pair
    assert load_settings(paths).settings.target_path == first.target == str(dense_target)
    broken = broken_model_folder(tmp_path)
    with qtbot.waitSignal(window.client.loadFailed, timeout=LOAD_TIMEOUT_MS):
        window.load_models(str(broken))
    assert window.banner.level == "error" and "broken-model" in window.banner.message
    assert "Still using dense_target" in window.banner.message
    assert window.pair is first and window.client.engine is not None
    saved = load_settings(paths).settings
    assert (saved.target_path, saved.draft_path) == (str(dense_target), None)  # nothing saved
    assert window.model_bar.target_path() == str(dense_target)
    assert window.composer.send_button.isEnabled()
    finished = send(qtbot, window, "Still there?")  # the previous pair still answers
    assert finished.tokens and not finished.cancelled and finished.stats.mode == "baseline"
    # a later load that succeeds replaces the pair, saves it and clears the banner
    with qtbot.waitSignal(window.client.loaded, timeout=LOAD_TIMEOUT_MS):
        window.load_models(str(dense_target), str(dense_draft_partial))
    assert window.pair.draft == str(dense_draft_partial) and not window.banner.isVisible()
    assert load_settings(paths).settings.draft_path == str(dense_draft_partial)


@pytest.mark.slow
def test_a_sweep_sent_during_a_reply_waits_its_turn(qtbot, open_window, dense_target, dense_draft_partial):
    window = open_window(dense_target, dense_draft_partial, max_tokens=200)
    qtbot.waitUntil(lambda: window.docks.measuring is None, timeout=LOAD_TIMEOUT_MS)
    order = []
    window.client.host.add_observer(
        lambda e: order.append((type(e).__name__, e.job.kind)) if isinstance(e, (JobStarted, JobFinished)) else None
    )
    view = window.docks.sweep_view
    view.read_power, view.machine_info = (lambda: AC), (lambda: {"chip": "test"})
    view.reps.setValue(1)
    view.warmup.setValue(0)
    view.max_tokens.setValue(4)
    view.ks_edit.setText("2")
    view.prompt_boxes["open"].setChecked(False)
    with qtbot.waitSignal(window.chat.replyFinished, timeout=REPLY_TIMEOUT_MS) as reply:
        window.composer.text.setPlainText("Count from one to a hundred.")
        window.composer.send_button.click()
        assert view.run_button.isEnabled()  # no lending: a sweep may be sent while the reply streams
        assert view.start()
        assert view.progress_label.text() == "Queued (1 ahead)…"
        qtbot.waitUntil(lambda: window.queue_label.text() == "Running: reply · queued: sweep")
    with qtbot.waitSignal(view.sweepFinished, timeout=REPLY_TIMEOUT_MS) as swept:
        pass
    assert not reply.args[0].cancelled and not swept.args[0].cancelled
    assert order == [
        ("JobStarted", "reply"),
        ("JobFinished", "reply"),
        ("JobStarted", "sweep"),
        ("JobFinished", "sweep"),
    ]
    assert swept.args[0].prompts[0].cells[-1].identical is True
    qtbot.waitUntil(lambda: window.queue_label.text() == "")


@pytest.mark.slow
def test_a_queued_ab_comparison_can_be_cancelled_before_it_runs(qtbot, open_window, dense_target, dense_draft_partial):
    window = open_window(dense_target, dense_draft_partial, max_tokens=200)
    qtbot.waitUntil(lambda: window.docks.measuring is None, timeout=LOAD_TIMEOUT_MS)
    ab = window.docks.sweep_view.ab
    started = []
    window.client.host.add_observer(lambda e: started.append(e.job.kind) if isinstance(e, JobStarted) else None)
    with qtbot.waitSignal(window.chat.replyFinished, timeout=REPLY_TIMEOUT_MS) as reply:
        window.composer.text.setPlainText("Count from one to a hundred.")
        window.composer.send_button.click()
        ab.run_button.click()
        assert ab.job is not None and ab.cancel_button.isEnabled()
        ab.cancel_button.click()
        assert ab.job is None or ab.job.handle.done
        qtbot.waitUntil(lambda: ab.job is None)
    assert ab.status.text() == "Cancelled before it started." and ab.rows == []
    assert ab.run_button.isEnabled() and not reply.args[0].cancelled
    assert "ab" not in started and "reply" in started
