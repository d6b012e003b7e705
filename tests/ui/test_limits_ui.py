"""The chat refuses an out-of-range setting before saving anything; spin boxes take their ranges from LIMITS."""

import pytest

from specchat.engine.config import LIMITS
from specchat.ui.dashboard.ab_panel import ABPanel
from specchat.ui.settings_panel import SettingsPanel

from .conftest import send


def test_spin_boxes_offer_exactly_the_limits(qtbot):
    panel = SettingsPanel()
    qtbot.addWidget(panel)
    for name in ("temperature", "top_p", "top_k", "min_p", "max_tokens"):
        box, limit = getattr(panel, name), LIMITS[name]
        assert (box.minimum(), box.maximum()) == (limit.spin_min, limit.high), name
        assert limit.accepts(box.minimum()) and limit.accepts(box.maximum()), name
    assert panel.top_k.specialValueText() == "off" and panel.temperature.minimum() == 0.0
    ab = ABPanel()
    qtbot.addWidget(ab)
    assert (ab.k.minimum(), ab.k.maximum()) == (1, LIMITS["num_draft_tokens"].high)
    assert ab.max_tokens.maximum() == LIMITS["max_tokens"].high


@pytest.mark.slow
def test_a_bad_setting_stops_the_send_before_the_message_is_saved(qtbot, open_window, dense_target):
    window = open_window(dense_target)
    window.settings.min_p = 1.5  # as a hand-edited value would arrive, past the spin box
    with qtbot.waitSignal(window.chat.settingsRejected, timeout=30_000) as blocker:
        window.composer.text.setPlainText("hello")
        window.composer.send_button.click()
    assert "min-p must be between 0 and 1, got 1.5" in blocker.args[0]
    assert window.banner.level == "error" and "min-p must be between 0 and 1" in window.banner.message
    assert window.store.conversations() == [] and window.chat.conversation_id is None
    assert window.composer.text.toPlainText() == "hello" and not window.chat.busy
    window.settings.min_p = 1.0  # the top of the range works: it keeps the likeliest token
    finished = send(qtbot, window, "hello")
    assert finished.tokens
    assert [m.role for m in window.store.messages(window.chat.conversation_id)] == ["user", "assistant"]


@pytest.mark.slow
def test_regenerate_with_a_bad_setting_keeps_the_reply(qtbot, open_window, dense_target):
    window = open_window(dense_target)
    send(qtbot, window, "hello")
    before = [(m.role, m.content) for m in window.store.messages(window.chat.conversation_id)]
    window.settings.temperature = float("nan")
    with qtbot.waitSignal(window.chat.settingsRejected, timeout=30_000) as blocker:
        window.chat.regenerate()
    assert "temperature must be between 0.01 and 2, or 0 (greedy), got nan" in blocker.args[0]
    assert [(m.role, m.content) for m in window.store.messages(window.chat.conversation_id)] == before
    window.settings.temperature = 0.0  # closing the window saves the settings, which must be valid
