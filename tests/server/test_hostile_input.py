"""Requests no server may die of: every out-of-range token id form and bodies nested deep, sent to a real
`serve` process, which answers each with a 400 naming the field and goes on serving."""

import json

import httpx
import pytest

from specchat.server.running import free_port

from .test_shutdown import start_serve

VOCAB = 384  # tests/fixtures/tiny_models.py: the tiny tokenizer's and models' vocabulary
OUT_OF_RANGE = [999999999, VOCAB, -1, -5, 2**31, 2**63, 2**64 + 1, -(2**63) - 1, 10**30]


@pytest.fixture(scope="module")
def serve(dense_target, dense_draft_partial):
    """A `serve` process (its own, so a crash shows as an exit code, not a dead test run)."""
    port = free_port()
    proc = start_serve(dense_target, dense_draft_partial, port)
    yield f"http://127.0.0.1:{port}", proc
    proc.terminate()
    proc.wait(timeout=60)


def post(base: str, path: str, body: object) -> httpx.Response:
    return httpx.post(base + path, content=json.dumps(body), timeout=120, headers={"content-type": "application/json"})


def assert_alive(base: str, proc) -> None:
    assert proc.poll() is None, f"serve exited with {proc.returncode}: {proc.stderr.read()}"
    assert httpx.get(base + "/v1/models", timeout=30).status_code == 200


ID_FORMS = [
    ("/v1/completions", lambda bad: {"prompt": [bad, 3], "max_tokens": 2}, "prompt[0]"),
    ("/v1/completions", lambda bad: {"prompt": [5, 6, bad], "max_tokens": 2}, "prompt[2]"),
    ("/v1/completions", lambda bad: {"prompt": [[bad, 3]], "max_tokens": 2}, "prompt[0]"),
    ("/v1/completions", lambda bad: {"prompt": [5, bad], "max_tokens": 2, "stream": True}, "prompt[1]"),
    ("/specchat/v1/generate", lambda bad: {"prompt_ids": [4, bad], "config": {"max_tokens": 2}}, "prompt_ids[1]"),
    ("/specchat/v1/decode", lambda bad: {"ids": [bad]}, "ids[0]"),
]


@pytest.mark.slow
@pytest.mark.parametrize("path,body,param", ID_FORMS, ids=[f"{p}-{n}" for n, (p, _, _) in enumerate(ID_FORMS)])
def test_every_out_of_range_token_id_is_a_400_naming_its_index(serve, path, body, param):
    base, proc = serve
    for bad in OUT_OF_RANGE:
        answer = post(base, path, body(bad))
        assert answer.status_code == 400, (bad, answer.text)
        error = answer.json()["error"]
        assert error["param"] == param, (bad, error)
        assert f"ids run from 0 to {VOCAB - 1}" in error["message"]
        assert_alive(base, proc)


@pytest.mark.parametrize("bad", [True, 1.5, "7", None])
def test_an_id_that_is_not_an_integer_is_refused(serve, bad):
    base, proc = serve
    for path, body in [
        ("/v1/completions", {"prompt": [5, bad], "max_tokens": 2}),
        ("/specchat/v1/generate", {"prompt_ids": [5, bad]}),
        ("/specchat/v1/decode", {"ids": [5, bad]}),
    ]:
        answer = post(base, path, body)
        assert answer.status_code == 400, (path, bad, answer.text)
        assert answer.json()["error"]["message"]
    assert_alive(base, proc)


def test_the_edges_of_the_vocabulary_and_a_single_id_are_served(serve):
    base, proc = serve
    for prompt in ([VOCAB - 1, 0], [0, VOCAB - 1], [42], [[42, 43]]):
        answer = post(base, "/v1/completions", {"prompt": prompt, "max_tokens": 2})
        assert answer.status_code == 200, (prompt, answer.text)
        assert answer.json()["usage"]["prompt_tokens"] == len(prompt[0] if isinstance(prompt[0], list) else prompt)
    assert post(base, "/specchat/v1/decode", {"ids": [0, VOCAB - 1]}).status_code == 200
    assert_alive(base, proc)


def nested(depth: int) -> str:
    return '{"messages": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("depth", [100, 5000, 100000])
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions", "/specchat/v1/generate"])
def test_a_body_nested_deep_is_a_400_in_the_api_error_shape(serve, path, depth):
    base, proc = serve
    answer = httpx.post(base + path, content=nested(depth), timeout=120, headers={"content-type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert "nest" in answer.json()["error"]["message"]
    assert_alive(base, proc)


def test_a_deep_body_to_the_anthropic_route_is_an_anthropic_error(serve):
    base, proc = serve
    answer = httpx.post(
        base + "/v1/messages", content=nested(5000), timeout=120, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["type"] == "error" and answer.json()["error"]["type"] == "invalid_request_error"
    assert_alive(base, proc)
