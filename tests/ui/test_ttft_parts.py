"""TTFT in its parts: the wait in the queue, reading the prompt, the first token; and the card says which
of them is going on."""

from specchat.engine import PrefillProgress
from specchat.engine.owner import JobInfo, QueueState
from specchat.ui.chat.controller import IN_QUEUE, READING, ActiveReply, ttft_split
from specchat.ui.chat.footer import footer_text, ttft_text
from specchat.ui.chat.trace import ReplyTrace

# the reply: nothing queued, a long prompt read in 31.1 s, its first token 2.0 s later
ENGINE = {"ttft_s": 33.1, "prefill_s": 31.1, "first_token_s": 2.0}
TIMED = {"ttft_from_send_s": 33.11, "queued_s": 31.1}  # queued_s: the trace's first event, after the prompt


def test_prompt_reading_is_not_queue_time():
    stats = ttft_split({**ENGINE, **TIMED})
    assert "queued_s" not in stats and round(stats["queue_s"], 2) == 0.01
    assert ttft_text(stats) == "TTFT 33.1 s (queue 0.0 s, prompt 31.1 s, first token 2.0 s)"
    # a message saved before the split, with the trace's queued_s: the engine's clock still tells the parts
    assert ttft_text({**ENGINE, **TIMED}) == "TTFT 33.1 s (queue 0.0 s, prompt 31.1 s, first token 2.0 s)"


def test_a_real_queue_wait_and_only_the_parts_that_are_not_zero():
    stats = ttft_split({"ttft_s": 0.4, "prefill_s": 0.0, "first_token_s": 0.4, "ttft_from_send_s": 12.4})
    assert ttft_text(stats) == "TTFT 12.4 s (queue 12.0 s, first token 0.4 s)"
    assert ttft_text({"ttft_s": 3.0, "prefill_s": 2.5, "first_token_s": 0.5}) == (
        "TTFT 3.0 s (prompt 2.5 s, first token 0.5 s)"  # not timed from Send (the API, the CLI): no queue part
    )
    assert ttft_text({"ttft_s": 0.3, "prefill_s": 0.1, "ttft_from_send_s": 0.32}) == "TTFT 0.32 s"  # short: whole
    footer = footer_text({"generated_tokens": 9, "decode_tokens_per_s": 5.0, **ENGINE, **TIMED})
    assert "TTFT 33.1 s (queue 0.0 s, prompt 31.1 s, first token 2.0 s)" in footer and "waiting" not in footer


def test_the_card_says_waiting_in_the_queue_then_reading_the_prompt(qtbot, open_window):
    window = open_window()  # no models: the controller and its card are all this needs
    chat = window.chat
    trace = ReplyTrace(lambda ids: "")
    trace.waiting = IN_QUEUE  # as a new reply starts
    chat.active = ActiveReply(5, 1, trace, 1, 0.0)
    reply = JobInfo(5, "reply")
    chat._queue_changed(QueueState(JobInfo(1, "load"), (reply,)))
    assert trace.waiting == "Waiting for the load to finish…"
    chat._queue_changed(QueueState(None, (reply,)))  # queued, nothing running this instant
    assert trace.waiting == IN_QUEUE == "Waiting in the queue…"
    chat._queue_changed(QueueState(reply, (), (reply,)))  # it started: the prompt is read first
    assert trace.waiting == READING == "Reading the prompt…"
    chat._queue_changed(QueueState(JobInfo(3, "reply"), (), (JobInfo(3, "reply"), reply)))  # a batch's row
    assert trace.waiting == READING
    trace.add(PrefillProgress(16, 64))  # then the prompt's progress, as it happens
    assert trace.waiting is None and trace.prefill == PrefillProgress(16, 64)
    chat.active = None


def test_a_new_reply_card_starts_in_the_queue(qtbot, open_window):
    window = open_window()
    window.chat.send("hello")  # its job's events come later, through the event loop
    assert window.chat.last_trace is not None and window.chat.last_trace.waiting == IN_QUEUE
    card = window.transcript.views[-1]
    card.render()  # what the transcript's redraw timer does
    assert card.prefill_label.text() == IN_QUEUE and card.prefill_label.isVisibleTo(card)
    qtbot.waitUntil(lambda: window.chat.active is None, timeout=60_000)  # no model: the job fails
