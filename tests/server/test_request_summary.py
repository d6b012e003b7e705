"""The API's totals from the request log's records: counts, failures and hang-ups, tokens, the token-weighted
mean speed, the mean acceptance over the requests that drafted, the last record, and their words; each record
names its generation jobs (in memory, not in the log file's line)."""

import json
import queue
import threading

import httpx
import pytest

from specchat.server.request_log import CLIENT_GONE, CLIENT_GONE_STATUS, RequestLog, RequestRecord
from specchat.server.request_summary import (
    RequestSummary,
    count_text,
    figures_text,
    record_text,
    summary_tooltip,
    totals_text,
)

from .conftest import API_KEY, start_server

CHAT = "/v1/chat/completions"


def record(route=CHAT, status=200, error="", method="POST", client="127.0.0.1:5555", **figures) -> RequestRecord:
    """A record as the server makes one."""
    return RequestRecord(1_800_000_000.0, client, method, route, status, 0.5, error=error, **figures)


FAST = record(completion_tokens=20, decode_tokens_per_s=20.0, drafter="mtp", acceptance=0.25, prompt_tokens=9)
SLOW = record(completion_tokens=60, decode_tokens_per_s=10.0, drafter="draft", acceptance=0.75, prompt_tokens=12)
PLAIN = record(completion_tokens=0, decode_tokens_per_s=0.0, drafter="baseline")  # generated nothing: no weight
REFUSED = record(status=400, error="The body is not valid JSON")
HUNG_UP = record(status=CLIENT_GONE_STATUS, error=CLIENT_GONE, completion_tokens=20, decode_tokens_per_s=5.0)
MODELS = record("/v1/models", method="GET")
ALL = [SLOW, REFUSED, FAST, PLAIN, HUNG_UP, MODELS]  # oldest first


def test_the_totals_of_a_mixed_log_are_exact():
    summary = RequestSummary.of(ALL)
    assert (summary.requests, summary.failed, summary.hang_ups) == (6, 2, 1)
    assert summary.completion_tokens == 100
    assert summary.mean_tokens_per_s == pytest.approx(100 / 11)  # 100 tokens in 60/10 + 20/20 + 20/5 = 11 s
    assert summary.drafted_requests == 2 and summary.mean_acceptance == 0.5  # (0.75 + 0.25) / 2
    assert summary.last is MODELS


def test_plus_adds_one_record_as_of_does():
    summary = RequestSummary()
    for one in ALL:
        summary = summary.plus(one)
    assert summary == RequestSummary.of(ALL)
    assert RequestSummary.of(ALL[:1]).plus(ALL[1]) == RequestSummary.of(ALL[:2])


def test_an_empty_log_has_no_means_and_no_last_record():
    summary = RequestSummary.of([])
    assert (summary.requests, summary.failed, summary.completion_tokens) == (0, 0, 0)
    assert summary.mean_tokens_per_s is None and summary.mean_acceptance is None and summary.last is None
    assert count_text(summary) == "0 requests" and totals_text(summary) == "0 requests"
    assert summary_tooltip(summary) == "No request has finished yet."


def test_refusals_alone_count_but_have_no_figures():
    summary = RequestSummary.of([REFUSED, MODELS])
    assert (summary.requests, summary.failed, summary.hang_ups, summary.completion_tokens) == (2, 1, 0, 0)
    assert summary.mean_tokens_per_s is None and summary.mean_acceptance is None
    assert totals_text(summary) == "2 requests · 1 failed"


def test_the_words_of_the_totals():
    summary = RequestSummary.of(ALL)
    assert count_text(summary) == "6 requests · 2 failed"
    assert count_text(RequestSummary.of([SLOW])) == "1 request"
    assert totals_text(summary) == "6 requests · 2 failed · 100 tokens · 9.1 tok/s mean · 50% accepted"
    assert summary_tooltip(summary).splitlines() == [
        "6 requests finished, 2 failed (1 hang-up: the client left before the response ended)",
        "100 tokens generated",
        "9.1 tok/s decode over the requests that generated (their tokens over their decode time)",
        "50% of drafts accepted, the mean over 2 requests that drafted",
        "Last: GET /v1/models · 200 · 127.0.0.1:5555",
    ]


def test_the_words_of_one_record():
    shown = record(completion_tokens=64, decode_tokens_per_s=11.23, drafter="draft", acceptance=0.85)
    assert (
        record_text(shown)
        == "POST /v1/chat/completions · 200 · 64 tokens · 11.2 tok/s · draft · 85% accepted · 127.0.0.1:5555"
    )
    assert figures_text(shown) == "200 · 64 tokens · 11.2 tok/s · draft · 85% accepted"
    assert figures_text(HUNG_UP) == f"499 · 20 tokens · 5.0 tok/s · {CLIENT_GONE}"
    assert (
        record_text(HUNG_UP)
        == f"POST /v1/chat/completions · 499 · 20 tokens · 5.0 tok/s · 127.0.0.1:5555 · {CLIENT_GONE}"
    )
    assert (
        record_text(record(client="", status=404, error="no such route"))
        == "POST /v1/chat/completions · 404 · no such route"
    )
    assert figures_text(record(completion_tokens=1, decode_tokens_per_s=3.0)) == "200 · 1 token · 3.0 tok/s"


def test_job_ids_stay_out_of_the_json_line():
    ids = record(job_ids=(4, 7))
    line = ids.to_json()
    assert "job_ids" not in line and line == record().to_json()
    assert json.loads(json.dumps(line))["route"] == CHAT


@pytest.mark.slow
def test_a_served_request_names_the_job_whose_events_the_backend_saw(host):
    log = RequestLog()
    arrived: queue.Queue[RequestRecord] = queue.Queue()
    log.subscribe(arrived.put)
    server = start_server(host, api_key=API_KEY, request_log=log)
    seen: set[int] = set()
    lock = threading.Lock()

    def observe(job_id: int, event: object) -> None:
        with lock:
            seen.add(job_id)

    server.backend.observers.append(observe)
    try:
        auth = {"Authorization": f"Bearer {API_KEY}"}
        body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6}
        answer = httpx.post(server.url + CHAT, json=body, headers=auth, timeout=120)
        assert answer.status_code == 200
        generated = arrived.get(timeout=120)
        assert len(generated.job_ids) == 1 and set(generated.job_ids) == seen
        assert generated.completion_tokens == answer.json()["usage"]["completion_tokens"]
        assert httpx.get(server.url + "/v1/models", headers=auth).status_code == 200
        assert arrived.get(timeout=120).job_ids == ()  # no generation: no job
    finally:
        server.stop()
