"""The request log: one record per finished request through every API family, refusals and failures with
their status and message, a hang-up as 499, each record also one JSON line in the log file."""

import json
import queue
import threading

import httpx
import pytest

from specchat.engine import Finished, GenerationStats, TextChunk
from specchat.server.app import ServerOptions
from specchat.server.backend import EngineBackend
from specchat.server.request_log import CLIENT_GONE, CLIENT_GONE_STATUS, RequestLog, RequestRecord
from specchat.server.running import BackgroundServer, free_port

from .conftest import API_KEY, DEFAULTS, start_server

MODEL = "dense_target"
HI = [{"role": "user", "content": "Hi"}]
WAIT_S = 120


class Records:
    """The records a log adds from now on, waited for one at a time."""

    def __init__(self, log: RequestLog):
        self.log, self.arrived = log, queue.Queue()
        log.subscribe(self.arrived.put)

    def next(self) -> RequestRecord:
        """The next record added (waits for it)."""
        return self.arrived.get(timeout=WAIT_S)

    def only(self, base_url: str) -> RequestRecord:
        """The next record, after checking no second one follows it: a marker request's record comes next."""
        record = self.next()
        assert httpx.get(base_url + "/v1/models", headers=AUTH).status_code == 200
        marker = self.next()
        assert (marker.route, marker.status) == ("/v1/models", 200), (record, marker)
        assert self.arrived.empty()
        return record

    def close(self) -> None:
        """Stop listening."""
        self.log.unsubscribe(self.arrived.put)


AUTH = {"Authorization": f"Bearer {API_KEY}"}


@pytest.fixture(scope="module")
def log_file(tmp_path_factory):
    return tmp_path_factory.mktemp("request-log") / "server-requests.jsonl"


@pytest.fixture(scope="module")
def logged(host, log_file):
    """A server whose request log writes log_file."""
    log = RequestLog(path=log_file)
    running = start_server(host, api_key=API_KEY, request_log=log)
    yield running, log
    running.stop()


@pytest.fixture
def records(logged):
    watching = Records(logged[1])
    yield watching
    watching.close()


@pytest.fixture
def base_url(logged):
    return logged[0].url


def assert_generated(record, route, prompt_tokens, completion_tokens):
    """A successful generation's record: route, 200, the counts the response reported, the server's drafter."""
    assert (record.method, record.route, record.status, record.error) == ("POST", route, 200, "")
    assert (record.prompt_tokens, record.completion_tokens) == (prompt_tokens, completion_tokens)
    assert record.drafter == DEFAULTS.mode == "draft"
    assert record.acceptance is not None and 0 <= record.acceptance <= 1
    assert record.decode_tokens_per_s is not None and record.decode_tokens_per_s > 0
    assert record.client.startswith("127.0.0.1:") and record.duration_s > 0 and not record.failed


def test_a_chat_completion_is_one_record_with_the_usage_it_reported(base_url, records):
    from openai import OpenAI

    client = OpenAI(base_url=base_url + "/v1", api_key=API_KEY, max_retries=0, timeout=WAIT_S)
    reply = client.chat.completions.create(model=MODEL, messages=HI, max_tokens=12)
    record = records.only(base_url)
    assert_generated(record, "/v1/chat/completions", reply.usage.prompt_tokens, reply.usage.completion_tokens)
    speculation = reply.usage.model_extra["speculation"]
    assert record.acceptance == speculation["acceptance_rate"]
    assert record.decode_tokens_per_s == speculation["decode_tokens_per_s"]


def test_a_streamed_chat_and_a_legacy_completion_each_record_once(base_url, records):
    from openai import OpenAI

    client = OpenAI(base_url=base_url + "/v1", api_key=API_KEY, max_retries=0, timeout=WAIT_S)
    chunks = list(
        client.chat.completions.create(
            model=MODEL, messages=HI, max_tokens=10, stream=True, stream_options={"include_usage": True}
        )
    )
    streamed = chunks[-1].usage
    assert_generated(records.only(base_url), "/v1/chat/completions", streamed.prompt_tokens, streamed.completion_tokens)
    legacy = client.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=8)
    assert_generated(
        records.only(base_url), "/v1/completions", legacy.usage.prompt_tokens, legacy.usage.completion_tokens
    )


def test_the_responses_api_records_its_usage(base_url, records):
    from openai import OpenAI

    client = OpenAI(base_url=base_url + "/v1", api_key=API_KEY, max_retries=0, timeout=WAIT_S)
    reply = client.responses.create(model=MODEL, input="Hi", max_output_tokens=10)
    assert_generated(records.only(base_url), "/v1/responses", reply.usage.input_tokens, reply.usage.output_tokens)


def test_anthropic_messages_record_their_usage(base_url, records):
    from anthropic import Anthropic

    claude = Anthropic(base_url=base_url, api_key=API_KEY, max_retries=0, timeout=WAIT_S)
    reply = claude.messages.create(model=MODEL, max_tokens=10, messages=HI)
    assert_generated(records.only(base_url), "/v1/messages", reply.usage.input_tokens, reply.usage.output_tokens)


def test_an_ollama_chat_records_its_counts(base_url, records):
    import ollama

    llama = ollama.Client(host=base_url, headers=AUTH, timeout=WAIT_S)
    reply = llama.chat(model=MODEL, messages=HI, options={"num_predict": 10})
    assert_generated(records.only(base_url), "/api/chat", reply.prompt_eval_count, reply.eval_count)


def test_a_body_that_is_not_json_records_its_400_and_the_message(base_url, records):
    answer = httpx.post(
        base_url + "/v1/chat/completions", content=b"{not json", headers={**AUTH, "content-type": "application/json"}
    )
    assert answer.status_code == 400
    record = records.only(base_url)
    assert (record.route, record.status) == ("/v1/chat/completions", 400) and record.failed
    assert record.error == answer.json()["error"]["message"] and "not valid JSON" in record.error
    assert record.prompt_tokens is record.completion_tokens is None and record.drafter == ""


def test_an_out_of_range_max_tokens_records_the_message_that_names_it(base_url, records):
    from openai import BadRequestError, OpenAI

    client = OpenAI(base_url=base_url + "/v1", api_key=API_KEY, max_retries=0, timeout=WAIT_S)
    with pytest.raises(BadRequestError) as refused:
        client.chat.completions.create(model=MODEL, messages=HI, max_tokens=-3)
    record = records.only(base_url)
    assert record.status == 400 and "max tokens" in record.error and "-3" in record.error
    assert record.error == refused.value.body["message"]


def test_refusals_in_anthropic_and_ollama_shapes_record_their_messages(base_url, records):
    anthropic = httpx.post(
        base_url + "/v1/messages", content=b"[", headers={**AUTH, "content-type": "application/json"}
    )
    record = records.only(base_url)
    assert record.status == anthropic.status_code == 400
    assert record.error == anthropic.json()["error"]["message"]
    unknown = httpx.post(base_url + "/api/chat", json={"model": "nope", "messages": HI}, headers=AUTH)
    record = records.only(base_url)
    assert record.status == unknown.status_code and record.status >= 400
    assert record.error == unknown.json()["error"] and record.route == "/api/chat"
    unauthorized = httpx.get(base_url + "/v1/models")
    record = records.only(base_url)
    assert record.status == unauthorized.status_code == 401 and "API key" in record.error


def test_each_record_is_one_json_line_in_the_log_file(base_url, records, log_file):
    httpx.get(base_url + "/v1/models", headers=AUTH)
    record = records.next()
    last = json.loads(log_file.read_text(encoding="utf-8").splitlines()[-1])
    assert last == json.loads(json.dumps(record.to_json()))
    assert last["route"] == "/v1/models" and last["status"] == 200 and last["prompt_tokens"] is None


class ScriptBackend(EngineBackend):
    """A job that fails at once (`fail`), or streams pieces until cancelled (a hang-up to be); its events go to
    the backend's observers as the real generation's do."""

    fail = True

    def generation_work(self, prompt_ids, cfg):
        observers = list(self.observers)

        def work(ctx):
            def emit(event):
                ctx.emit(event)
                for observe in observers:
                    observe(ctx.handle.id, event)

            if self.fail:
                raise RuntimeError("the engine broke on purpose")
            while not ctx.cancel.is_set():
                emit(TextChunk("la ", (0,), (False,)))
                ctx.cancel.wait(0.05)
            emit(Finished((0,), "la", GenerationStats(prompt_tokens=3, generated_tokens=1, stop_reason="cancelled")))

        return work


@pytest.fixture(scope="module")
def scripted(host):
    log = RequestLog()
    backend = ScriptBackend(host)
    server = BackgroundServer(backend, ServerOptions(DEFAULTS, request_log=log), port=free_port())
    server.start()
    yield server, backend, log
    server.stop()


def test_an_engine_failure_records_its_500_or_the_streams_error(scripted):
    server, backend, log = scripted
    backend.fail = True
    watching = Records(log)
    try:
        whole = httpx.post(server.url + "/v1/chat/completions", json={"messages": HI}, timeout=WAIT_S)
        assert whole.status_code == 500
        record = watching.next()
        assert record.status == 500 and "the engine broke on purpose" in record.error
        stream = httpx.post(server.url + "/v1/chat/completions", json={"messages": HI, "stream": True}, timeout=WAIT_S)
        assert stream.status_code == 200 and "the engine broke on purpose" in stream.text
        record = watching.next()
        assert record.status == 200 and record.failed and "the engine broke on purpose" in record.error
    finally:
        watching.close()


def test_a_client_that_hangs_up_records_499_with_what_was_generated(scripted):
    server, backend, log = scripted
    backend.fail = False
    watching = Records(log)
    first_chunk = threading.Event()
    try:
        body = {"messages": HI, "stream": True}
        with httpx.stream("POST", server.url + "/v1/chat/completions", json=body, timeout=WAIT_S) as answer:
            for line in answer.iter_lines():
                if line.startswith("data:"):
                    first_chunk.set()
                    break
        assert first_chunk.is_set()
        record = watching.next()
        assert (record.status, record.error) == (CLIENT_GONE_STATUS, CLIENT_GONE)
        assert (record.prompt_tokens, record.completion_tokens) == (3, 1)  # the stopped generation's stats
    finally:
        watching.close()
