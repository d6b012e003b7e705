"""Everyday message handling: prefill progress and stop, versions across regenerate and restart, copy,
delete, export through the menu, tints and scroll position after reopening."""

import json
import threading

import pytest
from PySide6.QtGui import QColor, QGuiApplication

from specchat.engine import GenerationConfig, PrefillProgress
from specchat.store import ConversationStore
from specchat.ui import theme

from .conftest import REPLY_TIMEOUT_MS, char_format, document_tooltips, screenshot, send
from .test_chat_window import fresh_reply

LONG_PROMPT = "Tell me about the river and the old mill by the bridge. " * 8


def regenerate(qtbot, window):
    with qtbot.waitSignal(window.chat.replyFinished, timeout=REPLY_TIMEOUT_MS) as blocker:
        window.transcript.views[-1].regenerate_button.click()
    return blocker.args[0]


@pytest.mark.slow
def test_prefill_progress_shows_on_the_card_and_stop_ends_it_before_any_text(qtbot, open_window, dense_target):
    window = open_window(dense_target)
    runner = window.client.engine.runner
    runner.prefill_chunk = 8
    gate = threading.Event()
    chunks = runner.prefill_chunks

    def gated_chunks(tokens):  # a reply waits after 16 tokens until the test has pressed Stop
        running = window.client.host.state().running
        for done, total in chunks(tokens):
            yield done, total
            if done >= 16 and running is not None and running.kind == "reply":
                gate.wait(10)

    runner.prefill_chunks = gated_chunks
    seen = []

    def on_event(_request_id, event):
        if isinstance(event, PrefillProgress):
            card = window.transcript.views[-1]
            card.render()
            seen.append(
                (
                    event.done,
                    event.total,
                    card.prefill_label.isVisibleTo(card),
                    card.prefill_label.text(),
                    card.prefill_bar.value(),
                    card.prefill_bar.maximum(),
                    card.body.isVisibleTo(card),
                )
            )
            if event.done >= 16 and not gate.is_set():
                screenshot(window, "main_window_reading_the_prompt")
                window.composer.stop_button.click()
                gate.set()

    window.client.event.connect(on_event)
    finished = send(qtbot, window, LONG_PROMPT)
    assert finished.cancelled and finished.tokens == () and len(seen) >= 2
    total = seen[0][1]
    assert total > 24 and [s[0] for s in seen[:2]] == [8, 16]
    assert seen[1][2:] == (True, f"Reading the prompt… 16 / {total:,} tokens", 16, total, False)
    notice = window.transcript.notice
    assert notice is not None and notice.footer.text().startswith("Stopped by you while reading the prompt (")
    assert not notice.prefill_label.isVisibleTo(notice) and [v.role for v in window.transcript.views] == ["user"]
    assert [m.role for m in window.store.messages(window.chat.conversation_id)] == ["user"]
    runner.prefill_chunks = chunks
    again = send(qtbot, window, "short")  # the next message clears the notice and replies normally
    assert again.tokens and window.transcript.notice is None
    assert [v.role for v in window.transcript.views] == ["user", "user", "assistant"]


@pytest.mark.slow
def test_regenerate_keeps_versions_that_flip_steer_the_next_reply_and_survive_restart(qtbot, open_window, dense_target):
    window = open_window(dense_target, max_tokens=12)
    first = send(qtbot, window, "hello there")
    window.panel.max_tokens.setValue(5)
    second = regenerate(qtbot, window)
    assert first.text != second.text and second.text
    card = window.transcript.views[-1]
    assert card.version_label.isVisible() and card.version_label.text() == "2/2"
    assert card.full_text() == second.text and card.footer.text().startswith("5 tokens")
    screenshot(window, "main_window_reply_versions")
    card.previous_button.click()
    assert card.version_label.text() == "1/2" and card.full_text() == first.text
    assert card.footer.text().startswith("12 tokens") and not card.previous_button.isEnabled()
    conv = window.chat.conversation_id
    assert [m.content for m in window.store.messages(conv)] == ["hello there", first.text]
    third = send(qtbot, window, "and then?")  # the history sent holds the version shown
    history = [
        {"role": "user", "content": "hello there"},
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": "and then?"},
    ]
    assert list(third.tokens) == fresh_reply(dense_target, None, history, GenerationConfig(max_tokens=5)).tokens
    window.close()
    again = open_window()
    card = again.transcript.views[1]
    assert again.chat.conversation_id == conv and card.version_label.text() == "1/2"
    assert card.full_text() == first.text and card.footer.text().startswith("12 tokens")
    card.next_button.click()
    assert card.full_text() == second.text and card.footer.text().startswith("5 tokens")
    assert again.store.messages(conv)[1].content == second.text


@pytest.mark.slow
def test_copy_and_delete_a_message(qtbot, open_window, dense_target):
    window = open_window(dense_target, max_tokens=6)
    send(qtbot, window, "first")
    second = send(qtbot, window, "second")
    conv = window.chat.conversation_id
    copy = window.transcript.views[-1].copy_button
    copy.click()
    assert QGuiApplication.clipboard().text() == second.text and copy.text() == "Copied ✓"
    qtbot.waitUntil(lambda: copy.text() == "Copy", timeout=30_000)
    asked = []
    window.chat.actions.confirm = lambda _parent, question: asked.append(question) or False
    window.transcript.views[0].delete_button.click()
    assert asked == ["Delete this message and the reply after it?"] and len(window.store.messages(conv)) == 4
    window.chat.actions.confirm = lambda _parent, _question: True
    window.transcript.views[0].delete_button.click()  # the user message and its reply go, in one transaction
    rows = window.store.messages(conv)
    assert [(m.position, m.role, m.content) for m in rows] == [(0, "user", "second"), (1, "assistant", second.text)]
    assert [(v.position, v.role) for v in window.transcript.views] == [(0, "user"), (1, "assistant")]
    window.transcript.views[1].delete_button.click()  # a reply alone
    assert [m.content for m in window.store.messages(conv)] == ["second"]
    assert window.transcript.views[0].edit_button.isEnabled()


@pytest.mark.slow
def test_export_through_the_chat_menu_writes_files_that_parse_back(qtbot, open_window, dense_target, tmp_path):
    window = open_window(dense_target, max_tokens=6)
    window.panel.system_prompt.setPlainText("Be brief.")
    reply = send(qtbot, window, "Name a fruit.")
    targets = {"markdown": tmp_path / "out.md", "json": tmp_path / "out.json"}
    suggested = []
    window.chat.actions.ask_path = lambda _parent, kind, name: suggested.append(name) or str(targets[kind])
    window.export_json_action.trigger()
    document = json.loads(targets["json"].read_text(encoding="utf-8"))
    assert document["format"] == "specchat-conversation" and document["system_prompt"] == "Be brief."
    assert [(m["role"], m["content"]) for m in document["messages"]] == [
        ("user", "Name a fruit."),
        ("assistant", reply.text),
    ]
    assert document["messages"][1]["stats"]["generated_tokens"] == len(reply.tokens)
    assert window.banner.isVisible() and str(targets["json"]) in window.banner.message
    window.export_markdown_action.trigger()
    markdown = targets["markdown"].read_text(encoding="utf-8")
    sections = markdown.split("\n## ")
    assert sections[0].startswith("# Name a fruit.") and sections[1] == "System prompt\n\nBe brief.\n"
    assert sections[2] == "You\n\nName a fruit.\n" and sections[3].startswith(f"Assistant\n\n{reply.text}\n")
    assert suggested == ["Name a fruit.json", "Name a fruit.md"]
    window.chat.actions.ask_path = lambda *_args: str(tmp_path / "missing" / "x.md")
    window.export_markdown_action.trigger()
    assert window.banner.level == "error" and "Could not export to " in window.banner.message


def _tints(view):
    doc = view.body.document()
    return [i for i in range(doc.characterCount() - 1) if _background(doc, i) == QColor(theme.DRAFT_BG)]


def _background(doc, position):
    return char_format(doc, position).background().color()


@pytest.mark.slow
def test_tints_and_rejection_marks_come_back_when_the_conversation_is_reopened(
    qtbot, open_window, dense_target, dense_draft_partial
):
    window = open_window(dense_target, dense_draft_partial, max_tokens=40)
    window.color_action.setChecked(True)
    send(qtbot, window, "Write a function.")
    trace = window.chat.last_trace
    spots = trace.rejection_chars()
    view = window.transcript.views[-1]
    tinted = _tints(view)
    tooltips = document_tooltips(view.body)
    assert tinted and spots and tooltips
    window.close()
    again = open_window()
    reopened = again.transcript.views[-1]
    assert again.color_action.isChecked() and reopened.text == trace.text
    assert _tints(reopened) == tinted
    assert document_tooltips(reopened.body) == tooltips


def test_a_reopened_long_conversation_shows_its_last_message(qtbot, open_window, paths):
    store = ConversationStore(paths.conversations_db)
    conv = store.create("Long one")
    for i in range(20):
        store.add_message(conv.id, "user", f"question {i}\n\nwith a second paragraph")
        store.add_message(conv.id, "assistant", f"answer {i}\n\n" + "word " * 40)
    store.close()
    window = open_window()
    bar = window.transcript.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0 and bar.value() == bar.maximum(), timeout=30_000)
    last = window.transcript.views[-1]
    assert last.visibleRegion().isEmpty() is False


@pytest.mark.slow
def test_a_regeneration_stopped_before_any_text_leaves_the_reply_as_it_was(qtbot, open_window, dense_target):
    window = open_window(dense_target, max_tokens=6)
    reply = send(qtbot, window, "hello")
    card = window.transcript.views[-1]
    footer = card.footer.text()
    gate = threading.Event()
    window.client.submit("hold", lambda _ctx: gate.wait(10))  # the regeneration waits in the queue behind it
    with qtbot.waitSignal(window.chat.replyFinished, timeout=REPLY_TIMEOUT_MS) as blocker:
        card.regenerate_button.click()
        window.composer.stop_button.click()  # cancelled while queued: it never runs
    gate.set()
    assert blocker.args[0].cancelled and blocker.args[0].tokens == ()
    card = window.transcript.views[-1]
    assert card.full_text() == reply.text and card.footer.text() == footer
    assert not card.version_label.isVisible() and window.transcript.notice is None
    row = window.store.messages(window.chat.conversation_id)[-1]
    assert (row.content, row.complete, row.stats["generated_tokens"]) == (reply.text, True, len(reply.tokens))


@pytest.mark.slow
def test_closing_the_window_mid_reply_saves_it_as_interrupted(qtbot, open_window, dense_target):
    from specchat.engine import TextChunk
    from specchat.ui.chat.footer import INTERRUPTED_TEXT

    window = open_window(dense_target, max_tokens=4000)
    chunks = []
    window.client.event.connect(lambda _id, event: chunks.append(event) if isinstance(event, TextChunk) else None)
    window.composer.text.setPlainText("Tell me a long story.")
    window.composer.send_button.click()
    qtbot.waitUntil(lambda: len(chunks) >= 3, timeout=REPLY_TIMEOUT_MS)
    job, partial = window.client.current, window.chat.active.trace.text
    window.close()
    qtbot.waitUntil(lambda: job.handle.done, timeout=REPLY_TIMEOUT_MS)
    qtbot.wait(100)  # the reply's last events reach the closed window now: they must touch no closed database
    again = open_window()
    reply = again.store.messages(again.chat.conversation_id)[-1]
    assert reply.role == "assistant" and reply.content == partial and partial
    assert reply.cancelled and reply.complete and reply.stats == {"stop_reason": "interrupted"}
    assert again.transcript.views[-1].footer.text() == INTERRUPTED_TEXT


@pytest.mark.slow
def test_a_queued_reply_says_what_it_waits_for_and_its_ttft_counts_from_send(qtbot, open_window, dense_target):
    window = open_window(dense_target, max_tokens=6)
    gate = threading.Event()
    window.client.submit("baseline", lambda _ctx: gate.wait(30))  # stands in for the load-time measurement
    with qtbot.waitSignal(window.chat.replyFinished, timeout=REPLY_TIMEOUT_MS) as blocker:
        window.composer.text.setPlainText("hello")
        window.composer.send_button.click()
        card = window.transcript.views[-1]
        qtbot.waitUntil(lambda: card.prefill_label.isVisibleTo(card), timeout=REPLY_TIMEOUT_MS)
        # "Waiting in the queue…" at first, then what it waits for: behind it, maybe, the real measurement
        # this load queued: "... and 1 more queued job to finish…"
        waits = "Waiting for the plain-decode measurement"
        qtbot.waitUntil(lambda: card.prefill_label.text().startswith(waits), timeout=REPLY_TIMEOUT_MS)
        assert card.prefill_bar.maximum() == 0  # busy
        threading.Event().wait(0.6)  # the reply waits this long in the queue at least
        gate.set()
    stats = window.store.messages(window.chat.conversation_id)[-1].stats
    assert stats["queue_s"] >= 0.6 and "queued_s" not in stats
    engine_ttft = blocker.args[0].stats.ttft_s  # the engine's own clock starts when the job does
    assert stats["queue_s"] == pytest.approx(stats["ttft_from_send_s"] - engine_ttft)
    footer = window.transcript.views[-1].footer.text()
    assert f"TTFT {stats['ttft_from_send_s']:.1f} s (queue {stats['queue_s']:.1f} s" in footer


@pytest.mark.slow
def test_a_reply_behind_the_plain_decode_measurement_says_how_far_it_has_got(
    qtbot, open_window, dense_target, monkeypatch
):
    import specchat.ui.engine_client as engine_client

    gate, measuring = threading.Event(), threading.Event()

    def measured(engine, cancel=None, progress=None):  # the load-time measurement, held at 8 of 64 tokens
        progress(8, 64)
        measuring.set()
        gate.wait(30)
        return 5.0

    monkeypatch.setattr(engine_client, "measure_baseline_tps", measured)
    window = open_window(dense_target, max_tokens=6)
    qtbot.waitUntil(measuring.is_set, timeout=REPLY_TIMEOUT_MS)
    with qtbot.waitSignal(window.chat.replyFinished, timeout=REPLY_TIMEOUT_MS):
        window.composer.text.setPlainText("hello")
        window.composer.send_button.click()
        card = window.transcript.views[-1]
        expected = "Waiting for the plain-decode measurement (8 / 64 tokens) to finish…"
        qtbot.waitUntil(lambda: card.prefill_label.text() == expected, timeout=REPLY_TIMEOUT_MS)
        gate.set()


def test_an_export_is_named_after_the_title_cut_between_words():
    from specchat.ui.chat.message_actions import _file_name

    title = "Explain how speculative decoding keeps the output exact: drafts, verification, and rollback"
    assert _file_name(title) == "Explain how speculative decoding keeps the output exact"  # not "...exact dr"
    assert _file_name("a/b\\c: d?") == "a b c d" and _file_name("???") == "conversation"
