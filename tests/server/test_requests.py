"""Request bodies read into engine settings; every bad value is a 400 naming its field."""

import pytest

from specchat.engine import GenerationConfig
from specchat.engine.events import GenerationStats
from specchat.server.errors import ApiError
from specchat.server.requests import parse_request
from specchat.server.responses import ResponseShape, StopMatcher, usage

MODELS = ["tiny-target"]
DEFAULTS = GenerationConfig(mode="draft", num_draft_tokens="auto", max_tokens=64)
CHAT = {"model": "tiny-target", "messages": [{"role": "user", "content": "hi"}]}


def _error(kind, body) -> ApiError:
    with pytest.raises(ApiError) as info:
        parse_request(kind, body, MODELS, DEFAULTS)
    return info.value


def test_a_chat_body_becomes_messages_and_a_config():
    body = dict(
        CHAT,
        max_completion_tokens=9,
        temperature=0.7,
        top_p=0.9,
        top_k=20,
        min_p=0.05,
        seed=3,
        stop="END",
        stream=True,
        stream_options={"include_usage": True},
        speculation={"mode": "lookup", "num_draft_tokens": 3},
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "he"}, {"type": "text", "text": "llo"}]},
        ],
    )
    req = parse_request("chat", body, MODELS, DEFAULTS)
    assert req.messages == ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"})
    assert (req.cfg.max_tokens, req.cfg.temperature, req.cfg.top_p, req.cfg.top_k, req.cfg.min_p, req.cfg.seed) == (
        9,
        0.7,
        0.9,
        20,
        0.05,
        3,
    )
    assert (req.cfg.mode, req.cfg.num_draft_tokens) == ("lookup", 3)
    assert req.stop == ("END",) and req.stream and req.include_usage


def test_without_fields_the_servers_defaults_apply():
    req = parse_request("chat", {"messages": CHAT["messages"]}, MODELS, DEFAULTS)
    assert req.cfg == DEFAULTS and req.model == "tiny-target" and not req.stream


@pytest.mark.parametrize(
    "body, status, param",
    [
        (dict(CHAT, model="/etc/passwd"), 404, "model"),
        (dict(CHAT, model="other"), 404, "model"),
        (dict(CHAT, n=2), 400, "n"),
        (dict(CHAT, temperature=-1), 400, "temperature"),
        (dict(CHAT, temperature="hot"), 400, "temperature"),
        (dict(CHAT, top_p=0), 400, "top_p"),
        (dict(CHAT, max_tokens=0), 400, "max_tokens"),
        (dict(CHAT, max_tokens=1.5), 400, "max_tokens"),
        (dict(CHAT, stop=["a", "b", "c", "d", "e"]), 400, "stop"),
        (dict(CHAT, messages=[]), 400, "messages"),
        (dict(CHAT, messages=[{"role": "robot", "content": "x"}]), 400, "messages[0].role"),
        (dict(CHAT, messages=[{"role": "tool", "content": "x"}]), 400, "messages[0].tool_call_id"),
        (dict(CHAT, messages=[{"role": "user", "content": [{"type": "image_url"}]}]), 400, "messages[0].content"),
        (dict(CHAT, speculation={"mode": "magic"}), 400, "speculation.mode"),
        (dict(CHAT, speculation={"num_draft_tokens": 0}), 400, "speculation.num_draft_tokens"),
        (dict(CHAT, speculation={"mode": "mtp", "num_draft_tokens": 6}), 400, "speculation.num_draft_tokens"),
        (dict(CHAT, min_p=float("nan")), 400, "min_p"),
        (dict(CHAT, top_k=5000), 400, "top_k"),
        (dict(CHAT, seed=-5), 400, "seed"),
        (dict(CHAT, seed=2**64), 400, "seed"),
        (dict(CHAT, stream="yes"), 400, "stream"),
    ],
)
def test_bad_values_are_refused_by_name(body, status, param):
    error = _error("chat", body)
    assert error.status == status and error.param == param
    assert error.body()["error"]["message"] and error.body()["error"]["param"] == param


def test_completion_prompts_and_a_body_that_is_not_an_object():
    assert parse_request("completion", {"prompt": ["once"]}, MODELS, DEFAULTS).prompt == "once"
    assert parse_request("completion", {"prompt": [5, 6]}, MODELS, DEFAULTS).prompt == (5, 6)
    assert _error("completion", {"prompt": ""}).param == "prompt"
    assert _error("completion", [1, 2]).status == 400


def test_stop_sequences_are_cut_even_across_chunks():
    matcher = StopMatcher(("END", "\n\n"))
    sent = [matcher.feed(t) for t in ["Hello E", "N", "x wor", "ld\n", "\nmore"]]
    assert "".join(sent) == "Hello ENx world" and matcher.stopped and matcher.flush() == ""
    open_ended = StopMatcher(("END",))
    assert open_ended.feed("tail E") == "tail " and open_ended.flush() == "E"


def test_usage_carries_the_speculation_figures():
    stats = GenerationStats(
        generated_tokens=10,
        drafted=8,
        accepted=6,
        mode="draft",
        num_draft_tokens=4,
        auto_k=True,
        decode_tokens_per_s=12.5,
        ttft_s=0.2,
    )
    body = usage(7, stats)
    assert (body["prompt_tokens"], body["completion_tokens"], body["total_tokens"]) == (7, 10, 17)
    assert body["speculation"] == {
        "mode": "draft",
        "num_draft_tokens": "auto",
        "drafted": 8,
        "accepted": 6,
        "acceptance_rate": 0.75,
        "decode_tokens_per_s": 12.5,
        "ttft_s": 0.2,
        "cached_prompt_tokens": 0,
        "batch_rows_max": 0,
        "batch_rows_mean": 0.0,
        "mean_k": 0.0,
        "plain_tokens": 0,
    }
    assert usage(3, GenerationStats())["speculation"]["acceptance_rate"] is None  # nothing drafted: no rate
    shape = ResponseShape("chat", "m")
    assert shape.chunk("a", first=True)["choices"][0]["delta"] == {"role": "assistant", "content": "a"}
    assert shape.usage_chunk(body)["choices"] == [] and shape.whole("x", "stop", body)["id"] == shape.id
