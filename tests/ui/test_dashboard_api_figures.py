"""The API's figures on the dashboard and in the status bar come from the server log's records: the status
bar's count (with failures), the dashboard's API line (totals and the last request) and, for the API request
the dashboard followed, its last-request line once the record arrives."""

import pytest
from openai import OpenAI

from specchat.engine.events import Finished, TextChunk
from specchat.server.request_log import CLIENT_GONE, CLIENT_GONE_STATUS, RequestRecord
from specchat.server.request_summary import figures_text, record_text, totals_text
from specchat.server.running import free_port
from specchat.ui.dashboard.api_line import NO_REQUESTS
from specchat.ui.server_log_model import COLUMNS
from specchat.ui.server_menu import ServeChoice

from .test_dashboard_one_generation import api_rounds, stats_of

WAIT_MS = 300_000
CHAT = "/v1/chat/completions"
ANSWERED = RequestRecord(
    1_800_000_000.0, "127.0.0.1:5555", "POST", CHAT, 200, 1.5, 9, 64, 11.23, "draft", 0.85, job_ids=(7,)
)
REFUSED = RequestRecord(1_800_000_001.0, "127.0.0.1:5556", "POST", CHAT, 400, 0.01, error="The body is not valid JSON")
HUNG_UP = RequestRecord(
    1_800_000_002.0,
    "127.0.0.1:5557",
    "POST",
    "/v1/messages",
    CLIENT_GONE_STATUS,
    0.4,
    5,
    16,
    20.0,
    "mtp",
    error=CLIENT_GONE,
    job_ids=(8,),
)


def serving(qtbot, window) -> int:
    """Serve the window's engine on a free port; the port."""
    port = free_port()
    assert window.server.serve(ServeChoice(port, None))
    return port


def test_the_status_bar_and_the_api_line_count_the_logs_records(qtbot, open_window):
    window = open_window()
    dash, link = window.docks.dashboard, window.server
    api = dash.api_line
    assert not api.isVisibleTo(dash)  # not serving, nothing recorded: no API line
    port = serving(qtbot, window)
    url = f"API http://127.0.0.1:{port}/v1"
    assert link.label.text() == f"{url} · 0 requests"
    assert api.isVisibleTo(dash) and api.full_text == NO_REQUESTS
    link.requests.add(ANSWERED)
    assert link.label.text() == f"{url} · 1 request"
    assert api.full_text == (
        "API: 1 request · 64 tokens · 11.2 tok/s mean · 85% accepted · last: "
        "POST /v1/chat/completions · 200 · 64 tokens · 11.2 tok/s · draft · 85% accepted · 127.0.0.1:5555"
    )
    link.requests.add(REFUSED)
    link.requests.add(HUNG_UP)
    assert link.label.text() == f"{url} · 3 requests · 2 failed"
    assert api.full_text == (  # 80 tokens over 64 / 11.2 + 16 / 20 = 6.51 s of decoding
        "API: 3 requests · 2 failed · 80 tokens · 12.3 tok/s mean · 85% accepted · last: "
        f"POST /v1/messages · 499 · 16 tokens · 20.0 tok/s · mtp · 127.0.0.1:5557 · {CLIENT_GONE}"
    )
    assert (
        "3 requests finished, 2 failed (1 hang-up: the client left before the response ended)" in link.label.toolTip()
    )
    assert f"\nLast: {record_text(HUNG_UP)}\n" in api.toolTip()
    shown = api.text()  # the line as drawn: the whole text, or its start and "…" where the dock is narrow
    assert shown and api.full_text.startswith(shown.removesuffix("…"))
    window.server.menu.serve_action.setChecked(False)
    assert not link.label.isVisible()
    assert api.isVisibleTo(dash) and api.full_text.startswith("API: 3 requests · 2 failed")  # records stay


def test_the_server_log_link_opens_the_log_window(qtbot, open_window):
    window = open_window()
    serving(qtbot, window)
    window.server.requests.add(ANSWERED)
    window.docks.dashboard.api_line.click()
    log_window = window.server.log_window
    assert log_window is not None and log_window.isVisible() and log_window.rows.rowCount() == 1
    window.server.menu.serve_action.setChecked(False)


def follow_api_request(dash, job_id: int) -> None:
    """The dashboard follows one API request from its first event to its Finished."""
    rounds = api_rounds()
    dash.on_api_event(job_id, TextChunk("a", (1,), (False,)))
    for r in rounds:
        dash.on_api_event(job_id, r)
    dash.on_api_event(job_id, Finished((1,) * 64, "x", stats_of(rounds, 64)))


def test_the_followed_requests_record_sets_its_last_request_line(qtbot, open_window):
    window = open_window()
    dash, requests = window.docks.dashboard, window.server.requests
    follow_api_request(dash, 7)
    engine_line = dash.status.text()
    assert engine_line.startswith("Last API request #7: ")
    requests.add(HUNG_UP)  # another request's record (job 8): the line stays the engine's
    assert dash.status.text() == engine_line
    requests.add(ANSWERED)  # the followed request's record: its figures, as the log window shows them
    assert dash.status.text() == "Last API request #7: 200 · 64 tokens · 11.2 tok/s · draft · 85% accepted"
    assert dash.api_line.isVisibleTo(dash)  # records exist, though the app does not serve


def test_a_record_does_not_replace_a_chat_replys_line(qtbot, open_window):
    window = open_window()
    dash = window.docks.dashboard
    rounds = api_rounds()
    dash.on_request_event(7, TextChunk("a", (1,), (False,)))  # a chat reply whose request id is also 7
    dash.on_request_event(7, Finished((1,) * 64, "x", stats_of(rounds, 64)))
    chat_line = dash.status.text()
    assert chat_line.startswith("Last chat reply: ")
    window.server.requests.add(ANSWERED)
    assert dash.status.text() == chat_line


@pytest.mark.slow
def test_a_served_request_agrees_across_the_dashboard_the_status_bar_and_the_log(
    qtbot, open_window, dense_target, dense_draft_partial
):
    window = open_window(dense_target, dense_draft_partial)
    port = serving(qtbot, window)
    dash, link = window.docks.dashboard, window.server
    client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0, timeout=120)
    reply = client.chat.completions.create(
        model="dense_target", messages=[{"role": "user", "content": "hi"}], max_tokens=12
    )
    qtbot.waitUntil(lambda: link.label.text().endswith("· 1 request"), timeout=WAIT_MS)
    record = link.requests.rows[0]
    assert record.completion_tokens == reply.usage.completion_tokens and len(record.job_ids) == 1
    assert dash.api_line.full_text == f"API: {totals_text(link.requests.summary)} · last: {record_text(record)}"
    qtbot.waitUntil(lambda: not dash.generating, timeout=WAIT_MS)
    assert dash.job_id == record.job_ids[0]  # the dashboard followed this request's engine events
    assert dash.status.text() == f"Last API request #{record.job_ids[0]}: {figures_text(record)}"
    log_window = link.show_log()
    headers = [c.header for c in COLUMNS]
    assert log_window.rows.index(0, headers.index("Reply")).data() == str(reply.usage.completion_tokens)
    assert log_window.rows.index(0, headers.index("Tok/s")).data() == f"{record.decode_tokens_per_s:.1f}"
    window.server.menu.serve_action.setChecked(False)
