"""Every footer names why the reply stopped; nothing drafted is 'acceptance —'; old saved stats still read."""

import json

import pytest

from specchat.ui.chat.footer import error_stats, footer_text

PLAIN = {"generated_tokens": 42, "decode_tokens_per_s": 31.5, "ttft_s": 0.12, "mode": "baseline", "max_tokens": 42}


@pytest.mark.parametrize(
    "stop,cancelled,tail",
    [("eos", False, "end of turn"), ("length", False, "max tokens (42)"), ("cancelled", True, "stopped by you")],
)
def test_footer_names_each_kind_of_stop(stop, cancelled, tail):
    assert (
        footer_text({**PLAIN, "stop_reason": stop}, cancelled)
        == f"42 tokens · 31.5 tok/s · TTFT 0.12 s · speculation off · {tail}"
    )


def test_a_failed_reply_says_error():
    assert footer_text(error_stats("the model ran out of memory"), True) == "error: the model ran out of memory"


def test_a_draft_reply_with_nothing_drafted_says_acceptance_dash():
    stats = {
        **PLAIN,
        "mode": "lookup",
        "num_draft_tokens": 3,
        "drafted": 0,
        "accepted": 0,
        "acceptance_rate": 0.0,
        "stop_reason": "eos",
    }
    assert footer_text(stats) == "42 tokens · 31.5 tok/s · TTFT 0.12 s · Prompt lookup K=3; acceptance — · end of turn"


def test_an_old_saved_message_without_the_new_keys():
    old = {
        "generated_tokens": 8,
        "decode_tokens_per_s": 20.0,
        "ttft_s": 0.1,
        "mode": "draft",
        "num_draft_tokens": 4,
        "drafted": 8,
        "accepted": 6,
        "acceptance_rate": 0.75,
        "stop_reason": "",
    }
    assert (
        footer_text(old, cancelled=True)
        == "8 tokens · 20.0 tok/s · TTFT 0.10 s · Draft model K=4; 75% of drafted tokens accepted · stopped by you"
    )
    assert footer_text(old) == "8 tokens · 20.0 tok/s · TTFT 0.10 s · Draft model K=4; 75% of drafted tokens accepted"


def test_ttft_counts_from_send_and_says_a_queue_wait():
    from specchat.ui.chat.footer import ttft_text

    assert ttft_text({"ttft_s": 0.31}) == "TTFT 0.31 s"  # a reply saved before the app timed it
    assert ttft_text({"ttft_s": 0.31, "ttft_from_send_s": 0.35, "queued_s": 0.01}) == "TTFT 0.35 s"
    assert ttft_text({"ttft_s": 1.8, "ttft_from_send_s": 29.0, "queued_s": 27.1}) == (
        "TTFT 29.0 s (queue 27.2 s, first token 1.8 s)"  # saved before the parts: the engine's clock tells them
    )


def test_a_queued_job_says_what_it_waits_for():
    from specchat.engine.owner import JobInfo, QueueState
    from specchat.ui.job_client import waiting_text

    reply = JobInfo(5, "reply")
    assert waiting_text(QueueState(JobInfo(1, "sweep"), (reply,)), 5) == "Waiting for the sweep to finish…"
    state = QueueState(JobInfo(1, "load"), (JobInfo(2, "baseline"), JobInfo(3, "ab"), reply))
    assert waiting_text(state, 5) == "Waiting for the load and 2 more queued jobs to finish…"
    assert waiting_text(QueueState(reply, ()), 5) is None  # it runs
    measuring = QueueState(JobInfo(1, "baseline"), (reply,))
    assert waiting_text(measuring, 5, "8 / 64 tokens") == (
        "Waiting for the plain-decode measurement (8 / 64 tokens) to finish…"
    )


AUTO = {
    **PLAIN,
    "mode": "draft",
    "auto_k": True,
    "num_draft_tokens": 4,
    "drafted": 60,
    "accepted": 45,
    "plain_tokens": 0,
    "k_rounds": {1: 10, 3: 20},
    "mean_k": 2.3,
    "rounds": 30,
    "stop_reason": "eos",
}


def saved(stats: dict) -> dict:
    """The stats as a saved message holds them: JSON turns int keys to str and tuples to lists."""
    return json.loads(json.dumps(stats))


def test_auto_k_says_how_often_drafting_stopped_early_and_at_what_confidence(qtbot):
    from specchat.ui.chat.message_view import MessageView

    stats = {**AUTO, "early_stops": 12, "median_stop_confidence": 0.41, "confidence_acceptance": ((0.4, 3, 5),)}
    for shown in (stats, saved(stats)):
        assert footer_text(shown).endswith(
            " · end of turn · drafts stopped early in 12 of 30 rounds (at confidence 0.41)"
        )
    view = MessageView("assistant", 1)
    qtbot.addWidget(view)
    view.set_footer(footer_text(saved(stats)))
    assert "drafts stopped early in 12 of 30 rounds" in view.footer.text()
    assert "the drafter was unsure, so the round verified what it had instead of drafting further" in (
        view.footer.toolTip()
    )


@pytest.mark.parametrize(
    "stops,rounds,tail",
    [
        (1, {3: 30}, "drafts stopped early in 1 of 30 rounds (at confidence 0.41)"),
        (1, {3: 1}, "drafts stopped early in the only round (at confidence 0.41)"),
        (30, {3: 30}, "drafts stopped early in all 30 rounds (at confidence 0.41)"),
    ],
)
def test_early_stops_are_counted_in_words(stops, rounds, tail):
    stats = {**AUTO, "k_rounds": rounds, "early_stops": stops, "median_stop_confidence": 0.41}
    assert footer_text(stats).endswith(f"end of turn · {tail}")


def test_nothing_about_early_stops_without_any_or_without_auto_k():
    none = footer_text({**AUTO, "early_stops": 0, "median_stop_confidence": None})
    assert none.endswith("accepted · end of turn")
    fixed = {**AUTO, "auto_k": False, "early_stops": 3, "median_stop_confidence": 0.5}
    assert "stopped early" not in footer_text(fixed)
    assert "stopped early" not in footer_text({**PLAIN, "early_stops": 3, "auto_k": True, "stop_reason": "eos"})
    assert "stopped early" not in footer_text({k: v for k, v in AUTO.items() if k != "early_stops"})  # older dicts
