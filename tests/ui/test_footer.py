"""Every footer names why the reply stopped; nothing drafted is 'acceptance —'; old saved stats still read."""

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
        "TTFT 29.00 s (27.1 s waiting in the queue)"
    )


def test_a_queued_job_says_what_it_waits_for():
    from specchat.engine.owner import JobInfo, QueueState
    from specchat.ui.engine_client import waiting_text

    reply = JobInfo(5, "reply")
    assert waiting_text(QueueState(JobInfo(1, "sweep"), (reply,)), 5) == "Waiting for the sweep to finish…"
    state = QueueState(JobInfo(1, "load"), (JobInfo(2, "baseline"), JobInfo(3, "ab"), reply))
    assert waiting_text(state, 5) == "Waiting for the load and 2 more queued jobs to finish…"
    assert waiting_text(QueueState(reply, ()), 5) is None  # it runs
    measuring = QueueState(JobInfo(1, "baseline"), (reply,))
    assert waiting_text(measuring, 5, "8 / 64 tokens") == (
        "Waiting for the plain-decode measurement (8 / 64 tokens) to finish…"
    )
