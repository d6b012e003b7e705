"""A client that hangs up while its long prompt is being read: the job stops within a prefill chunk or two."""

import threading

import httpx
import pytest

from specchat.engine.batch import newcomer_prefill as batch_prefill

from .conftest import API_KEY, start_server

CHUNK = 8
PROMPT_WORDS = 600  # about 75+ chunks of 8 tokens


@pytest.fixture(scope="module", params=[1, 8], ids=["alone", "batched"])
def server(host, request):
    """One request at a time (its prompt read by the engine's runner), or batched (by the batch decoder)."""
    running = start_server(host, api_key=API_KEY, max_batch=request.param)
    yield running
    running.stop()


@pytest.fixture
def slow_prefill(host, monkeypatch):
    """The target reads 8 tokens per chunk and each chunk waits for the test's permission (one per tick)."""
    runner = host.engine.runner
    original_chunk, original_chunks = runner.prefill_chunk, runner.prefill_chunks
    chunks_done, go = [], threading.Semaphore(0)

    def gated(tokens):
        for done, total in original_chunks(tokens):
            chunks_done.append(done)
            yield done, total
            go.acquire(timeout=30)  # the test lets one chunk through at a time

    runner.prefill_chunk, runner.prefill_chunks = CHUNK, gated
    original_solo = batch_prefill.solo_prefill

    def gated_solo(model, tokens, _chunk, *args, **kwargs):  # a batch's newcomer, read alone before it joins
        steps = original_solo(model, tokens, CHUNK, *args, **kwargs)
        while True:
            try:
                done, total = next(steps)
            except StopIteration as end:
                return end.value
            chunks_done.append(done)
            yield done, total
            go.acquire(timeout=30)

    monkeypatch.setattr(batch_prefill, "solo_prefill", gated_solo)
    yield chunks_done, go
    runner.prefill_chunk, runner.prefill_chunks = original_chunk, original_chunks
    for _ in range(1000):
        go.release()


@pytest.mark.slow
@pytest.mark.parametrize("stream", [False, True])
def test_hanging_up_during_prefill_cancels_the_job(server, host, slow_prefill, stream):
    chunks_done, go = slow_prefill
    body = {"messages": [{"role": "user", "content": "word " * PROMPT_WORDS}], "max_tokens": 8, "stream": stream}
    with httpx.Client(timeout=httpx.Timeout(60, read=1.0)) as raw:
        with pytest.raises(httpx.ReadTimeout):  # nothing comes back while the prompt is read: hang up
            with raw.stream(
                "POST", server.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {API_KEY}"}
            ) as response:
                for _ in response.iter_lines():
                    pass
    at_hang_up = len(chunks_done)
    released = 0
    while host.state().running is not None and released < 60:  # one chunk per tick until the job notices
        go.release()
        released += 1
        threading.Event().wait(0.3)
    assert host.state().running is None, f"the abandoned job still reads its prompt after {released} more chunks"
    assert len(chunks_done) - at_hang_up <= 6, "the job went on reading long after its client left"
