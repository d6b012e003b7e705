"""The OpenAI-compatible API, driven by the official `openai` client against a real server."""

import threading
import time
from dataclasses import replace

import httpx
import openai
import pytest

from .conftest import API_KEY, DEFAULTS, chat_ids, reference, start_server

MESSAGES = [{"role": "user", "content": "Write a short story about a fox."}]


def test_greedy_chat_equals_the_engine_and_streams_the_same_text(client, host):
    expected = reference(host, chat_ids(host, MESSAGES), DEFAULTS)
    reply = client.chat.completions.create(model=client.models.list().data[0].id, messages=MESSAGES)
    assert reply.choices[0].message.content == expected.text
    assert reply.choices[0].finish_reason == ("length" if expected.stats.stop_reason == "length" else "stop")
    assert reply.usage.completion_tokens == len(expected.tokens)
    spec = reply.usage.model_extra["speculation"]
    assert spec["mode"] == "draft" and spec["num_draft_tokens"] == 2 and spec["drafted"] > 0
    assert spec["acceptance_rate"] == pytest.approx(spec["accepted"] / spec["drafted"])
    chunks = list(
        client.chat.completions.create(
            model=reply.model, messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == expected.text
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == len(expected.tokens)


def test_completions_and_per_request_speculation(client, host):
    ids = list(host.engine.tokenizer.encode("Once upon a time"))
    for spec, mode in (
        (None, "draft"),
        ({"mode": "lookup", "num_draft_tokens": "auto"}, "lookup"),
        ({"mode": "baseline"}, "baseline"),
    ):
        cfg = replace(
            DEFAULTS,
            max_tokens=12,
            **({"mode": mode, "num_draft_tokens": "auto"} if mode == "lookup" else {"mode": mode}),
        )
        expected = reference(host, ids, cfg)
        extra = {"speculation": spec} if spec else None
        done = client.completions.create(
            model="dense_target", prompt="Once upon a time", max_tokens=12, extra_body=extra
        )
        assert done.choices[0].text == expected.text
        assert done.usage.model_extra["speculation"]["mode"] == mode
        streamed = client.completions.create(
            model="dense_target", prompt="Once upon a time", max_tokens=12, stream=True, extra_body=extra
        )
        assert "".join(c.choices[0].text for c in streamed if c.choices) == expected.text


def test_stop_sequences_cut_the_text(client, host):
    full = reference(host, chat_ids(host, MESSAGES), DEFAULTS).text
    stop = full[len(full) // 2 : len(full) // 2 + 3]
    assert stop.strip()
    reply = client.chat.completions.create(model="dense_target", messages=MESSAGES, stop=[stop])
    assert reply.choices[0].message.content == full[: full.index(stop)]
    assert reply.choices[0].finish_reason == "stop"


def test_three_concurrent_clients_each_get_their_serial_answer(client, host):
    prompts = [[{"role": "user", "content": f"Tell me about number {n}."}] for n in range(3)]
    serial = [reference(host, chat_ids(host, p), DEFAULTS).text for p in prompts]
    answers = [None] * 3

    def ask(n):
        answers[n] = (
            client.chat.completions.create(model="dense_target", messages=prompts[n]).choices[0].message.content
        )

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert answers == serial


@pytest.mark.parametrize("max_batch", [1, 8])
def test_a_follow_up_reuses_the_cached_prefix(host, max_batch):
    from openai import OpenAI

    server = start_server(host, api_key=API_KEY, max_batch=max_batch)
    try:
        client = OpenAI(base_url=server.url + "/v1", api_key=API_KEY, max_retries=0, timeout=120)
        _follow_up_reuses_the_cached_prefix(client)
    finally:
        server.stop()


def _follow_up_reuses_the_cached_prefix(client):
    first = client.chat.completions.create(model="dense_target", messages=MESSAGES)
    follow = MESSAGES + [
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "And then?"},
    ]
    again = client.chat.completions.create(model="dense_target", messages=follow)
    assert again.usage.model_extra["speculation"]["cached_prompt_tokens"] > 0


def test_a_client_that_disconnects_frees_the_engine(client, host, server):
    with httpx.Client(timeout=60) as raw:
        with raw.stream(
            "POST",
            server.url + "/v1/chat/completions",
            headers={"Authorization": f"Bearer {API_KEY}"},
            json={"messages": MESSAGES, "max_tokens": 4000, "stream": True},
        ) as response:
            for line in response.iter_lines():
                if line.startswith("data: {"):
                    break  # one chunk arrived: the job is generating; now hang up
    deadline = time.monotonic() + 60  # generous for a loaded machine: a cancelled job ends at its next round
    while host.state().running is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert host.state().running is None, "the abandoned job still runs"
    reply = client.chat.completions.create(model="dense_target", messages=MESSAGES, max_tokens=2)
    assert reply.usage.completion_tokens == 2 and not host.state().queued  # served at once, nothing behind it


def test_the_api_key_is_required(server):
    from openai import OpenAI

    for key in ("wrong", ""):
        with pytest.raises(openai.AuthenticationError):
            OpenAI(base_url=server.url + "/v1", api_key=key or "none", max_retries=0).models.list()
    assert httpx.get(server.url + "/v1/models").status_code == 401


@pytest.mark.parametrize(
    "body, status, words",
    [
        ({"model": "nope", "messages": MESSAGES}, 404, ["nope", "dense_target"]),
        ({"model": "../../etc", "messages": MESSAGES}, 404, ["not loaded"]),
        ({"messages": MESSAGES, "temperature": -1}, 400, ["temperature"]),
        ({"messages": MESSAGES, "top_p": 2}, 400, ["top-p", "up to 1"]),
        ({"messages": MESSAGES, "n": 3}, 400, ["n must be 1"]),
        ({"messages": [{"role": "user", "content": "word " * 33000}]}, 400, ["32768", "tokens"]),
    ],
)
def test_errors_come_in_openais_format(server, body, status, words):
    response = httpx.post(
        server.url + "/v1/chat/completions", json=body, timeout=60, headers={"Authorization": f"Bearer {API_KEY}"}
    )
    assert response.status_code == status
    error = response.json()["error"]
    assert all(w in error["message"] for w in words) and error["type"]


def test_malformed_json_and_oversized_bodies(host):
    server = start_server(host, max_body_bytes=1000)
    try:
        bad = httpx.post(server.url + "/v1/chat/completions", content=b"{not json", timeout=30)
        assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]["message"]
        big = httpx.post(
            server.url + "/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "x" * 5000}]},
            timeout=30,
        )
        assert big.status_code == 413
    finally:
        server.stop()


def test_a_lone_surrogate_is_a_400_naming_where_it_is(server):
    for path, body in (
        ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "hi \\ud800"}]}'),
        ("/v1/completions", b'{"prompt": "\\udfff", "max_tokens": 2}'),
        ("/specchat/v1/tokenize", b'{"text": "a\\ud800b"}'),
    ):
        answer = httpx.post(
            server.url + path,
            content=body,
            timeout=30,
            headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"},
        )
        assert answer.status_code == 400, (path, answer.text)
        error = answer.json()["error"]
        assert "lone UTF-16 surrogate" in error["message"]
        assert (
            error["param"]
            == {
                "/v1/chat/completions": "messages[0].content",
                "/v1/completions": "prompt",
                "/specchat/v1/tokenize": "text",
            }[path]
        )


def wait_idle(host) -> None:
    """Until the host runs and holds no job (generous: a loaded machine is slow, never wrong)."""
    deadline = time.monotonic() + 60
    while host.state().running is not None or host.state().queued:
        assert time.monotonic() < deadline, host.state()
        time.sleep(0.05)


def test_max_queue_0_serves_an_idle_server_and_answers_503_while_busy(host):
    server = start_server(host, max_queue=0, max_batch=1)  # one at a time: nothing may wait
    url = server.url + "/v1/completions"
    generating, hang_up = threading.Event(), threading.Event()

    def stream() -> None:  # reads on (a reader that stops reading hangs up) until told to hang up
        chat = {"messages": MESSAGES, "max_tokens": 4000, "stream": True}
        with httpx.Client(timeout=120) as raw, raw.stream("POST", server.url + "/v1/chat/completions", json=chat) as r:
            for line in r.iter_lines():
                if line.startswith("data: {"):
                    generating.set()
                if hang_up.is_set():
                    return

    reader = threading.Thread(target=stream)
    try:
        wait_idle(host)
        idle = httpx.post(url, json={"prompt": "hi", "max_tokens": 2}, timeout=120)
        assert idle.status_code == 200, idle.text  # 0 means no waiting, not no serving
        reader.start()
        assert generating.wait(60), "the stream never started"
        busy = httpx.post(url, json={"prompt": "hi", "max_tokens": 2}, timeout=120)
        assert busy.status_code == 503 and int(busy.headers["Retry-After"]) >= 1, busy.text
        hang_up.set()
        reader.join(60)
        wait_idle(host)  # the stream hung up: its job was cancelled
        again = httpx.post(url, json={"prompt": "hi", "max_tokens": 2}, timeout=120)
        assert again.status_code == 200, again.text
    finally:
        hang_up.set()
        server.stop()


def test_how_many_would_wait_counts_the_new_request_and_what_starts_at_once():
    from specchat.engine.owner import QueueState
    from specchat.engine.owner.events import JobInfo
    from specchat.server.backend import EngineBackend

    job = JobInfo(1, "api")
    one_at_a_time = EngineBackend(None, max_queue=0, max_batch=1)
    assert one_at_a_time.waiting_after(QueueState(None, ()), joinable=False) == 0  # idle: starts at once
    assert one_at_a_time.waiting_after(QueueState(job, (), (job,)), joinable=False) == 1
    assert one_at_a_time.waiting_after(QueueState(None, (job,)), joinable=False) == 1  # the front one goes first
    batch = EngineBackend(None, max_queue=0, max_batch=4)
    assert batch.waiting_after(QueueState(job, (), (job,) * 3), joinable=True) == 0  # a free row
    assert batch.waiting_after(QueueState(job, (job,), (job,) * 3), joinable=True) == 1
    assert batch.waiting_after(QueueState(job, (job,) * 2, (job,) * 4), joinable=True) == 3


def test_serving_beyond_loopback_needs_a_key(host):
    from specchat.server.running import BackgroundServer, check_exposure

    with pytest.raises(ValueError, match="API key"):
        check_exposure("0.0.0.0", None)
    check_exposure("127.0.0.1", None)
    check_exposure("::1", None)
    check_exposure("0.0.0.0", "k")
    with pytest.raises(ValueError):
        BackgroundServer(
            None, __import__("specchat.server.app", fromlist=["ServerOptions"]).ServerOptions(), host="0.0.0.0"
        )


def test_specchat_event_stream_drives_a_remote_engine(server, host):
    from specchat.engine.events import Finished, RoundResult, TextChunk
    from specchat.server.remote import RemoteEngine

    remote = RemoteEngine(server.url, API_KEY)
    status = remote.status()
    assert status.target.endswith("dense_target") and status.available_modes["draft"] is None
    events = list(remote.stream(chat_ids(host, MESSAGES), DEFAULTS))
    expected = reference(host, chat_ids(host, MESSAGES), DEFAULTS)
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.text == expected.text
    assert finished.tokens == tuple(expected.tokens) and finished.stats.drafted > 0
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == expected.text
    assert any(isinstance(e, RoundResult) for e in events)
    remote.api_key = "wrong"  # a key changed on the server after connecting: a Failed event, not an exception
    refused = list(remote.stream(chat_ids(host, MESSAGES), DEFAULTS))
    assert len(refused) == 1 and "401" in refused[0].message


def test_an_empty_prompt_is_refused_before_any_model_work(host):
    from specchat.engine import ConfigError

    server = start_server(host)
    try:
        for body in ({"prompt": ""}, {"prompt": "", "stream": True}, {"prompt": []}):
            response = httpx.post(server.url + "/v1/completions", json={**body, "max_tokens": 2}, timeout=120)
            assert response.status_code == 400 and response.json()["error"]["param"] == "prompt", response.text
    finally:
        server.stop()
    with pytest.raises(ConfigError, match="the prompt is empty"):  # and the engine refuses one on its own
        host.engine.admit([], DEFAULTS)
