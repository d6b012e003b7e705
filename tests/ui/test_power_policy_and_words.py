"""Preferences ▸ On battery, and reasons in plain words with the technical detail kept."""

import pytest

from specchat.system.power import PowerStatus
from specchat.ui.plain_words import NO_DRAFT, NO_MTP_HEAD, UPSTREAM, draft_refusal, mode_reason, mtp_reason
from specchat.ui.power_policy import MAX_AGE_S, PLAIN, WARN, PowerPolicy

from .conftest import send

BATTERY = PowerStatus("battery", 55.0, False, "Battery 55%")
MAINS = PowerStatus("ac", 100.0, False, "AC")


class FakePower:
    def __init__(self, status):
        self.status, self.reads, self.now = status, 0, 0.0

    def read(self):
        self.reads += 1
        return self.status

    def clock(self):
        return self.now


def test_plain_on_battery_decodes_plainly_and_says_so_once_per_battery_spell():
    power = FakePower(BATTERY)
    policy = PowerPolicy("plain_on_battery", power.read, power.clock)
    assert policy.reply_mode("draft") == ("baseline", PLAIN)
    assert policy.reply_mode("mtp") == ("baseline", None)
    assert policy.reply_mode("baseline") == ("baseline", None)
    assert power.reads == 1  # read again only when the reading is old
    power.status, power.now = MAINS, MAX_AGE_S + 1
    assert policy.reply_mode("draft") == ("draft", None)
    power.status, power.now = BATTERY, 2 * MAX_AGE_S + 2
    assert policy.reply_mode("draft") == ("baseline", PLAIN)  # a new battery spell: said again


def test_warn_keeps_speculating_and_ignore_says_nothing():
    power = FakePower(BATTERY)
    warn = PowerPolicy("warn", power.read, power.clock)
    assert warn.reply_mode("draft") == ("draft", WARN)
    assert warn.reply_mode("draft") == ("draft", None)
    assert PowerPolicy("ignore", power.read, power.clock).reply_mode("lookup") == ("lookup", None)


@pytest.mark.slow
def test_the_window_decodes_plainly_on_battery_when_set_to(qtbot, open_window, dense_target, dense_draft_partial):
    window = open_window(dense_target, dense_draft_partial)
    power = FakePower(BATTERY)
    window.preferences.power = PowerPolicy("plain_on_battery", power.read, power.clock)
    assert window.speculation.checked_mode() == "draft"
    finished = send(qtbot, window, "Hello on battery")
    assert finished.stats.mode == "baseline"
    assert window.banner.level == "info" and window.banner.message == PLAIN
    power.status, power.now = MAINS, MAX_AGE_S + 1
    assert send(qtbot, window, "Hello on mains").stats.mode == "draft"


def test_reasons_in_plain_words_keep_the_technical_detail():
    assert mtp_reason(False, "config.json declares no MTP layers") == (
        NO_MTP_HEAD,
        "config.json declares no MTP layers",
    )
    assert mode_reason("mtp", "no MTP head: config.json declares no MTP layers") == (
        "this model has no multi-token-prediction head",
        "config.json declares no MTP layers",
    )
    assert mode_reason("draft", "no draft model loaded") == (NO_DRAFT, "")
    hook = "speculation for this model is off: mlx-lm 0.30 changed gated_delta_update"
    assert mode_reason("lookup", hook) == (UPSTREAM, hook)
    assert mode_reason("draft", None) == ("", "")
    error = "tiny-b cannot draft for tiny-a: vocabulary: vocabularies differ (ab vs cd): token id 0 is 'x'"
    plain, detail = draft_refusal(error)
    assert "vocabulary" in plain and "token id" not in plain and detail == error
