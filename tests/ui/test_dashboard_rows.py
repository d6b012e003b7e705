"""The dashboard's last-reply line says how many other requests a reply shared its rounds with: real API
requests decoded in one batch say it, a request alone does not."""

import threading
from collections import defaultdict

import pytest

from specchat.engine import Finished
from specchat.ui.dashboard.dashboard import shared_text
from tests.server.conftest import API_KEY, host, start_server  # noqa: F401 (host: the tiny dense pair's fixture)
from tests.server.test_concurrent_batch import run_clients, stream_chat

from .test_dashboard import make_dashboard

SHARED = "shared each round with"


@pytest.fixture(scope="module")
def served(host):  # noqa: F811
    """A batching server, and every engine event of its requests by job id."""
    events: dict[int, list] = defaultdict(list)
    lock = threading.Lock()

    def observe(job_id: int, event: object) -> None:
        with lock:
            events[job_id].append(event)

    running = start_server(host, api_key=API_KEY, max_batch=8)
    running.backend.observers.append(observe)
    yield running, events
    running.stop()


def show(qtbot, paths, events: list) -> str:
    """A fresh dashboard's last-reply line after one API request's events."""
    dash = make_dashboard(qtbot, paths)
    for event in events:
        dash.on_api_event(7, event)
    return dash.status.text()


def test_a_batched_reply_says_it_shared_its_rounds_and_a_solo_one_does_not(qtbot, paths, served, host):  # noqa: F811
    server, events = served
    run_clients(server, host, [0, 1, 2], 16)
    finished = {job: e[-1] for job, e in events.items()}
    assert len(finished) == 3 and all(isinstance(f, Finished) for f in finished.values())
    job, last = max(finished.items(), key=lambda item: item[1].stats.batch_rows_mean)
    assert last.stats.batch_rows_mean > 1
    line = show(qtbot, paths, events[job])
    assert line.startswith("Last API request #7: ") and SHARED in line
    assert shared_text(last.stats) in line
    others = round(last.stats.batch_rows_mean - 1, 1)
    assert f"{SHARED} {others:g} other request" in line
    assert line.endswith(" on average · " + line.rsplit(" · ", 1)[1])  # before how it ended

    events.clear()
    results: dict = {}
    stream_chat(server, 0, 8, results)
    assert not isinstance(results[0], Exception), results[0]
    ((job, alone),) = events.items()
    assert alone[-1].stats.batch_rows_max == 0
    solo_line = show(qtbot, paths, alone)
    assert solo_line.startswith("Last API request #7: ") and SHARED not in solo_line


def test_the_shared_words():
    from specchat.engine import GenerationStats

    assert shared_text(GenerationStats(batch_rows_max=3, batch_rows_mean=3.0)) == (
        " · shared each round with 2 other requests on average"
    )
    assert shared_text(GenerationStats(batch_rows_max=2, batch_rows_mean=2.0)) == (
        " · shared each round with 1 other request on average"
    )
    assert shared_text(GenerationStats(batch_rows_max=4, batch_rows_mean=2.5)).startswith(
        " · shared each round with 1.5 "
    )
    assert shared_text(GenerationStats(batch_rows_max=2, batch_rows_mean=1.025)).startswith(
        " · shared each round with 0.025 "
    )
    assert shared_text(GenerationStats(batch_rows_max=1, batch_rows_mean=1.0)) == ""  # a batch of one
    assert shared_text(GenerationStats()) == ""  # alone
