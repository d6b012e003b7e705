"""Rows per round in the request log: requests that shared a batch carry the rows they were decoded with (as
their usage reports them), the Server log's Rows column shows them, and a request alone has none."""

import queue
import re

import pytest

from specchat.engine import GenerationStats
from specchat.server.request_log import GenerationFigures, RequestLog, RequestRecord
from specchat.ui.server_log_model import COLUMNS, NONE, RequestLogModel, rows_text

from .conftest import API_KEY, start_server
from .test_concurrent_batch import WAIT_S, run_clients, stream_chat

ROWS = [c.header for c in COLUMNS].index("Rows")
CELL = re.compile(r"^(\d+(?:\.\d)?)(?: \(max (\d+)\))?$")  # "2.5 (max 3)", or "3" when every round had 3


@pytest.fixture(scope="module")
def logged_batch(host):
    """A server that batches up to 8 requests and logs each."""
    log = RequestLog()
    running = start_server(host, api_key=API_KEY, max_batch=8, request_log=log)
    yield running, log
    running.stop()


def take_records(log: RequestLog, run) -> list[RequestRecord]:
    """The records the log adds while `run()` runs, waited for: one per request."""
    arrived: queue.Queue[RequestRecord] = queue.Queue()
    log.subscribe(arrived.put)
    try:
        expected = run()
        return [arrived.get(timeout=WAIT_S) for _ in range(expected)]
    finally:
        log.unsubscribe(arrived.put)


def rows_cell(record: RequestRecord) -> str:
    """The Rows cell of the Server log's table for a record."""
    model = RequestLogModel([record])
    return str(model.data(model.index(0, ROWS)))


def test_requests_sharing_a_batch_record_their_rows_and_the_log_shows_them(logged_batch, host, qapp):
    server, log = logged_batch
    indices = [0, 1, 2]
    results: dict = {}

    def run() -> int:
        results.update(run_clients(server, host, indices, 16))
        return len(indices)

    records = take_records(log, run)
    usages = [results[i][1] for i in indices]
    reported = sorted(
        (u.prompt_tokens, u.completion_tokens, s["batch_rows_max"], round(s["batch_rows_mean"], 6))
        for u in usages
        for s in [u.model_extra["speculation"]]
    )
    logged = sorted(
        (r.prompt_tokens, r.completion_tokens, r.batch_rows_max, round(r.batch_rows_mean, 6)) for r in records
    )
    assert logged == reported  # the record holds what the response's usage said
    assert max(r.batch_rows_max for r in records) >= 2
    for record in records:
        assert 1 <= record.batch_rows_mean <= record.batch_rows_max <= len(indices)
        match = CELL.match(rows_cell(record))
        assert match is not None, rows_cell(record)
        assert float(match[1]) == round(record.batch_rows_mean, 1)
        assert int(match[2] or match[1]) == record.batch_rows_max
    shared = max(records, key=lambda r: r.batch_rows_mean)
    assert float(CELL.match(rows_cell(shared))[1]) > 1  # type: ignore[index]
    assert shared.to_json()["batch_rows_mean"] == shared.batch_rows_mean  # the log file's line carries it too


def test_a_request_alone_has_no_rows(logged_batch, qapp):
    server, log = logged_batch
    results: dict = {}

    def run() -> int:
        stream_chat(server, 0, 8, results)
        return 1

    (record,) = take_records(log, run)
    assert not isinstance(results[0], Exception), results[0]
    assert (record.batch_rows_max, record.batch_rows_mean) == (0, 0.0)
    assert rows_cell(record) == NONE


def test_rows_words():
    def of(most: int, mean: float) -> str:
        return rows_text(
            RequestRecord(0.0, "", "POST", "/v1/chat/completions", 200, 0.1, 4, 2, 10.0, "draft", None, most, mean)
        )

    assert of(4, 3.0) == "3 (max 4)"
    assert of(4, 2.75) == "2.8 (max 4)"
    assert of(2, 2.0) == "2"
    assert of(1, 1.0) == "1"
    assert of(0, 0.0) == NONE


def test_figures_of_several_generations_weigh_each_by_its_rounds():
    alone = GenerationStats(generated_tokens=4, rounds=4, decode_s=1.0, decode_tokens_per_s=4.0)
    batched = GenerationStats(
        generated_tokens=6, rounds=2, decode_s=1.0, decode_tokens_per_s=6.0, batch_rows_max=4, batch_rows_mean=3.0
    )
    other = GenerationStats(
        generated_tokens=6, rounds=6, decode_s=1.0, decode_tokens_per_s=6.0, batch_rows_max=2, batch_rows_mean=2.0
    )
    figures = GenerationFigures.of([alone, batched, other])
    assert (figures.batch_rows_max, figures.batch_rows_mean) == (4, (3.0 * 2 + 2.0 * 6) / 8)
    assert GenerationFigures.of([alone]).batch_rows_max == 0
