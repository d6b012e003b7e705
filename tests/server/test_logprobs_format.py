"""Engine logprobs in OpenAI's chat and legacy completions shapes, and the request fields that ask for them."""

import json

import pytest

from specchat.engine import Engine
from specchat.engine.logprobs import TokenLogprob
from specchat.server.errors import ApiError
from specchat.server.logprobs import (
    chat_logprobs,
    completion_logprobs,
    logprobs_setting,
    token_bytes,
    token_text,
)

TEXT = "héllo wörld"


@pytest.fixture(scope="module")
def tokenizer(dense_target):
    """The tiny models' byte-level tokenizer (mlx-lm's wrapper around a Hugging Face one)."""
    return Engine.load(dense_target).tokenizer


class DecodeOnly:
    """A tokenizer that only decodes (as a remote engine's does)."""

    def __init__(self, tokenizer):
        self.inner = tokenizer

    def decode(self, ids):
        return self.inner.decode(list(ids))


def reply(tokenizer) -> list[TokenLogprob]:
    """TEXT's tokens with made-up logprobs and two alternatives each (token + 1, token + 2)."""
    ids = list(tokenizer.encode(TEXT))
    return [TokenLogprob(t, -0.5 - i, ((t, -0.5 - i), (t + 1, -2.0 - i))) for i, t in enumerate(ids)]


def test_token_bytes_are_exact_even_inside_a_character(tokenizer):
    logprobs = reply(tokenizer)
    lookup = token_bytes(tokenizer)
    raws = [lookup(lp.token) for lp in logprobs]
    assert b"".join(raws) == TEXT.encode()
    assert any(len(raw) == 1 and raw[0] >= 0x80 for raw in raws), "the tokenizer splits ö: the case is covered"
    assert token_text(b"\xc3") == "bytes:\\xc3" and token_text(b" w") == " w"


def test_chat_logprobs_have_openais_shape(tokenizer):
    logprobs = reply(tokenizer)
    body = chat_logprobs(logprobs, tokenizer)
    assert json.loads(json.dumps(body)) == body
    content = body["content"]
    assert len(content) == len(logprobs)
    for entry, lp in zip(content, logprobs):
        assert set(entry) == {"token", "logprob", "bytes", "top_logprobs"}
        assert entry["logprob"] == lp.logprob and entry["bytes"] == list(token_bytes(tokenizer)(lp.token))
        assert entry["token"] == token_text(bytes(entry["bytes"]))
        assert [set(t) for t in entry["top_logprobs"]] == [{"token", "logprob", "bytes"}] * 2
        assert [t["logprob"] for t in entry["top_logprobs"]] == [v for _, v in lp.top]
        assert entry["top_logprobs"][0]["token"] == entry["token"]
    assert bytes(b for entry in content for b in entry["bytes"]).decode() == TEXT
    assert any(entry["token"].startswith("bytes:\\x") for entry in content)
    no_top = chat_logprobs([TokenLogprob(logprobs[0].token, 0.0)], tokenizer)["content"][0]
    assert no_top["top_logprobs"] == [] and no_top["logprob"] == 0.0


def test_completion_logprobs_have_the_legacy_shape(tokenizer):
    logprobs = reply(tokenizer)
    body = completion_logprobs(logprobs, tokenizer)
    assert json.loads(json.dumps(body)) == body
    assert set(body) == {"tokens", "token_logprobs", "top_logprobs", "text_offset"}
    assert body["tokens"] == chat_tokens(logprobs, tokenizer)
    assert body["token_logprobs"] == [lp.logprob for lp in logprobs]
    for top, lp, token in zip(body["top_logprobs"], logprobs, body["tokens"]):
        assert top[token] == lp.logprob and len(top) <= 2
    offsets = body["text_offset"]
    assert offsets[0] == 0 and offsets == sorted(offsets)
    raws = [token_bytes(tokenizer)(lp.token) for lp in logprobs]
    space = next(i for i, raw in enumerate(raws) if raw.startswith(b" "))
    assert offsets[space] == TEXT.index(" ")  # counted in characters: é before it is one
    assert len(set(offsets)) < len(offsets), "ö's two tokens share its offset"
    shifted = completion_logprobs(logprobs, tokenizer, text_offset=7)["text_offset"]
    assert shifted == [o + 7 for o in offsets]


def chat_tokens(logprobs, tokenizer) -> list[str]:
    return [entry["token"] for entry in chat_logprobs(logprobs, tokenizer)["content"]]


def test_the_chosen_token_joins_the_legacy_top_dict(tokenizer):
    lp = TokenLogprob(reply(tokenizer)[0].token, -1.25)  # logprobs=0: no alternatives
    top = completion_logprobs([lp], tokenizer)["top_logprobs"]
    assert top == [{completion_logprobs([lp], tokenizer)["tokens"][0]: -1.25}]


def test_a_decode_only_tokenizer_gives_each_tokens_decoded_text(tokenizer):
    logprobs = reply(tokenizer)
    content = chat_logprobs(logprobs, DecodeOnly(tokenizer))["content"]
    for entry, lp in zip(content, logprobs):
        assert entry["token"] == tokenizer.decode([lp.token])
        assert bytes(entry["bytes"]) == entry["token"].encode()


@pytest.mark.parametrize(
    "body,setting",
    [
        ({}, None),
        ({"logprobs": False}, None),
        ({"logprobs": None, "top_logprobs": None}, None),
        ({"logprobs": True}, 0),
        ({"logprobs": True, "top_logprobs": 0}, 0),
        ({"logprobs": True, "top_logprobs": 20}, 20),
    ],
)
def test_chat_asks_with_logprobs_and_top_logprobs(body, setting):
    assert logprobs_setting("chat", body) == setting


@pytest.mark.parametrize(
    "body,param,words",
    [
        ({"logprobs": "yes"}, "logprobs", "logprobs must be true or false, got 'yes'"),
        ({"logprobs": 1}, "logprobs", "logprobs must be true or false"),
        (
            {"logprobs": True, "top_logprobs": 21},
            "top_logprobs",
            "top_logprobs must be a whole number between 0 and 20",
        ),
        ({"logprobs": True, "top_logprobs": -1}, "top_logprobs", "between 0 and 20, got -1"),
        ({"logprobs": True, "top_logprobs": 1.5}, "top_logprobs", "whole number"),
        ({"logprobs": True, "top_logprobs": True}, "top_logprobs", "got True"),
        ({"logprobs": True, "top_logprobs": "3"}, "top_logprobs", "got '3'"),
        ({"logprobs": True, "top_logprobs": 10**400}, "top_logprobs", "between 0 and 20"),
        ({"top_logprobs": 3}, "top_logprobs", "top_logprobs needs logprobs set to true"),
        ({"logprobs": False, "top_logprobs": 0}, "top_logprobs", "needs logprobs"),
    ],
)
def test_bad_chat_values_are_a_400_naming_the_field(body, param, words):
    with pytest.raises(ApiError) as caught:
        logprobs_setting("chat", body)
    assert caught.value.status == 400 and caught.value.param == param and words in caught.value.message


@pytest.mark.parametrize("value", [None, 0, 3, 5])
def test_completions_ask_with_a_number_up_to_five(value):
    assert logprobs_setting("completion", {"logprobs": value}) == value


@pytest.mark.parametrize("value", [6, -1, True, 2.0, "2", [1]])
def test_bad_completion_values_are_a_400_naming_logprobs(value):
    with pytest.raises(ApiError) as caught:
        logprobs_setting("completion", {"logprobs": value})
    error = caught.value
    assert error.status == 400 and error.param == "logprobs"
    assert error.message == f"logprobs must be a whole number between 0 and 5, got {value!r}"
    assert error.body()["error"]["type"] == "invalid_request_error"


def test_an_unknown_request_kind_is_a_programming_error():
    with pytest.raises(ValueError, match="embeddings"):
        logprobs_setting("embeddings", {})
