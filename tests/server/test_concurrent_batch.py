"""Many clients at once on the official openai client: their requests decode in one batch, each still
speculating, and each greedy output equals the same request run alone."""

import threading
import time
from dataclasses import replace

import pytest

from specchat.engine import Finished
from specchat.engine.owner import JobStarted

from .conftest import API_KEY, DEFAULTS, chat_ids, reference, start_server

WAIT_S = 300  # generous: nothing here measures time
PROMPTS = [
    "Write a short story about a fox.",
    "def fibonacci(n):",
    "Explain how a bicycle stays upright.",
    "for i in range(10): print(i)",
    "Once upon a time in a quiet village",
    "class Stack:\n    def push(self, item):",
    "The weather today is",
    "import json\ndata = json.loads(text)",
    "Tell me about the sea.",
]
MODES = ("draft", "lookup", "baseline")  # mixed in every batch


@pytest.fixture(scope="module")
def batch_server(host):
    running = start_server(host, api_key=API_KEY, max_batch=8)
    yield running
    running.stop()


def messages(i):
    return [{"role": "user", "content": PROMPTS[i]}]


def request_cfg(i, tokens):
    mode = MODES[i % len(MODES)]
    return replace(DEFAULTS, mode=mode, num_draft_tokens="auto" if mode != "baseline" else 2, max_tokens=tokens)


def speculation(i):
    mode = MODES[i % len(MODES)]
    return {"mode": mode, "num_draft_tokens": "auto"} if mode != "baseline" else {"mode": "baseline"}


class Hold:
    """A job that keeps the engine busy until released, so that requests queue up and start together."""

    def __init__(self, host):
        self.host, self.gate = host, threading.Event()
        self.handle = host.submit("hold", lambda ctx: self.gate.wait(WAIT_S))

    def until_queued(self, n):
        deadline = time.monotonic() + WAIT_S
        while len([j for j in self.host.state().queued if j.kind == "api"]) < n:
            assert time.monotonic() < deadline, self.host.state()
            time.sleep(0.01)

    def release(self):
        self.gate.set()
        assert self.handle.wait(WAIT_S)


def stream_chat(server, i, tokens, results, stop_after=None):
    """One client's streamed chat (its own connection); results[i] = (text, usage) or the exception."""
    from openai import OpenAI

    client = OpenAI(base_url=server.url + "/v1", api_key=API_KEY, max_retries=0, timeout=WAIT_S)
    try:
        stream = client.chat.completions.create(
            model="dense_target",
            messages=messages(i),
            max_tokens=tokens,
            stream=True,
            stream_options={"include_usage": True},
            extra_body={"speculation": speculation(i)},
        )
        text, usage, chunks = [], None, 0
        for chunk in stream:
            if chunk.choices:
                text.append(chunk.choices[0].delta.content or "")
                chunks += 1
            if chunk.usage is not None:
                usage = chunk.usage
            if stop_after is not None and chunks >= stop_after:
                stream.close()  # the client hangs up mid-stream
                break
        results[i] = ("".join(text), usage)
    except Exception as exc:  # reported by the test
        results[i] = exc


def run_clients(server, host, indices, tokens, stop_after=None, longer=None):
    """Every client at once, their requests queued behind a hold so that they start together."""
    results, longer = {}, longer or {}
    hold = Hold(host)
    threads = [
        threading.Thread(
            target=stream_chat, args=(server, i, longer.get(i, tokens), results, (stop_after or {}).get(i))
        )
        for i in indices
    ]
    for thread in threads:
        thread.start()
    hold.until_queued(len(indices))
    hold.release()
    for thread in threads:
        thread.join(WAIT_S)
    for i in indices:
        assert not isinstance(results.get(i), Exception), results.get(i)
    return results


def solo(host, i, tokens):
    return reference(host, chat_ids(host, messages(i)), request_cfg(i, tokens))


@pytest.mark.parametrize("clients", [4, 8])
def test_concurrent_streams_equal_their_solo_runs(batch_server, host, clients):
    indices = list(range(clients))
    expected = {i: solo(host, i, 24) for i in indices}
    results = run_clients(batch_server, host, indices, 24)
    for i in indices:
        text, usage = results[i]
        assert text == expected[i].text, (i, MODES[i % 3])
        spec = usage.model_extra["speculation"]
        assert spec["mode"] == MODES[i % 3] and usage.completion_tokens == len(expected[i].tokens)
        assert 1 <= spec["batch_rows_mean"] <= spec["batch_rows_max"] <= clients
    assert max(results[i][1].model_extra["speculation"]["batch_rows_max"] for i in indices) >= 2
    assert any(results[i][1].model_extra["speculation"]["drafted"] > 0 for i in indices)
    for i in indices:  # how deep it drafted, and how many tokens were plain steps, add up to its reply
        spec = results[i][1].model_extra["speculation"]
        assert 0 <= spec["plain_tokens"] <= results[i][1].completion_tokens
        assert spec["mode"] != "baseline" or spec["plain_tokens"] == results[i][1].completion_tokens


def test_a_client_that_hangs_up_mid_stream_ends_only_its_row(batch_server, host):
    ends = {}  # job id -> its Finished
    observer = lambda job_id, event: ends.setdefault(job_id, event) if isinstance(event, Finished) else None  # noqa: E731
    batch_server.backend.observers.append(observer)
    try:
        expected = {i: solo(host, i, 24) for i in (0, 2)}
        # the client that hangs up asked for far more tokens than it reads
        results = run_clients(batch_server, host, [0, 1, 2], 24, stop_after={1: 2}, longer={1: 400})
    finally:
        batch_server.backend.observers.remove(observer)
    for i in (0, 2):
        assert results[i][0] == expected[i].text
    assert len(ends) == 3
    assert sorted(e.cancelled for e in ends.values()) == [False, False, True]
    cut = next(e for e in ends.values() if e.cancelled)
    assert cut.stats.generated_tokens < 400 and cut.stats.stop_reason == "cancelled"


def test_a_ninth_request_waits_for_a_row_and_completes(batch_server, host):
    indices = list(range(9))
    expected = {i: solo(host, i, 12) for i in indices}
    seen = []  # (running rows, queued requests) as each request starts: a lifecycle event, not a poll

    def on_start(event):
        if isinstance(event, JobStarted):
            state = host.state()
            seen.append((len(state.running_batch), len([j for j in state.queued if j.kind == "api"])))

    host.add_observer(on_start)
    try:
        results = run_clients(batch_server, host, indices, 12)
    finally:
        host.remove_observer(on_start)
    assert (8, 1) in seen  # eight rows ran while the ninth waited
    assert max(rows for rows, _ in seen) == 8
    for i in indices:
        text, usage = results[i]
        assert text == expected[i].text, i
        assert usage.model_extra["speculation"]["batch_rows_max"] <= 8
