"""A server whose engine has a context length below the model's: a longer prompt is a 400
context_length_exceeded naming the setting, a reply stops where the cap is, and /api/ps and /api/show report it."""

import httpx
import pytest

from specchat.engine.owner import EngineHost, context_length_job, load_pair_job

from .conftest import API_KEY, start_server

CAP = 256
HEADERS = {"Authorization": f"Bearer {API_KEY}"}


@pytest.fixture(scope="module")
def capped(dense_target, dense_draft_partial):
    """A server over the tiny dense pair with its context capped at CAP tokens."""
    host = EngineHost()
    host.submit("load", load_pair_job(dense_target, dense_draft_partial)).result(timeout=120)
    host.submit("context", context_length_job(CAP)).result(timeout=60)
    server = start_server(host, api_key=API_KEY)
    yield server
    server.stop()
    host.shutdown()


def post(server, path: str, body: dict) -> httpx.Response:
    return httpx.post(server.url + path, json=body, timeout=120, headers=HEADERS)


def test_a_prompt_over_the_cap_is_context_length_exceeded(capped):
    answer = post(capped, "/v1/completions", {"prompt": "I believe the meaning of life is " * 60, "max_tokens": 4})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "context_length_exceeded"
    assert error["message"].endswith(f"but the context holds {CAP} (your context length setting)")


def test_a_reply_stops_where_the_cap_is(capped):
    answer = post(capped, "/v1/completions", {"prompt": "def fibonacci(n):", "max_tokens": 2000, "temperature": 0})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"] == CAP


def test_ps_and_show_report_the_cap_and_the_models_own_length(capped):
    running = httpx.get(capped.url + "/api/ps", timeout=60, headers=HEADERS).json()["models"]
    assert [m["context_length"] for m in running] == [CAP]
    shown = post(capped, "/api/show", {"model": "dense_target"}).json()
    assert f"num_ctx {CAP}" in shown["parameters"].splitlines()
    assert shown["model_info"]["qwen3.context_length"] == 32768  # the model's own fact
    over = post(
        capped, "/api/generate", {"model": "dense_target", "prompt": "hi", "stream": False, "options": {"num_ctx": 300}}
    )
    assert over.status_code == 400
    assert over.json()["error"] == f"options.num_ctx is 300 but the served context holds {CAP} tokens"
