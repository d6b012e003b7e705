"""logprobs and top_logprobs through the server with the official openai client: the target's distribution,
the same with speculation on and off, whole and streamed, on chat and legacy completions."""

import math

import pytest

ASK = [{"role": "user", "content": "Say something."}]


def _chat(client, mode, stream=False, top=3):
    extra = {"speculation": {"mode": mode, "num_draft_tokens": 3 if mode != "baseline" else 1}}
    return client.chat.completions.create(
        model="dense_target",
        messages=ASK,
        max_tokens=12,
        logprobs=True,
        top_logprobs=top,
        stream=stream,
        extra_body=extra,
    )


@pytest.mark.parametrize("mode", ["draft", "lookup"])
def test_chat_logprobs_are_the_same_speculating_and_plain(client, mode):
    plain = _chat(client, "baseline").choices[0]
    spec = _chat(client, mode).choices[0]
    assert spec.message.content == plain.message.content
    a, b = plain.logprobs.content, spec.logprobs.content
    assert len(a) == len(b) == 12
    for x, y in zip(a, b, strict=True):
        assert x.token == y.token and math.isclose(x.logprob, y.logprob, abs_tol=1e-4)
        assert len(x.top_logprobs) == 3 and x.top_logprobs[0].token == x.token  # greedy: the chosen is the top
        assert [t.token for t in x.top_logprobs] == [t.token for t in y.top_logprobs]
    assert b"".join(bytes(t.bytes) for t in a).decode("utf-8", "replace") == plain.message.content


def test_streamed_chat_logprobs_add_up_to_the_whole(client):
    whole = _chat(client, "draft").choices[0].logprobs.content
    streamed = [
        t
        for chunk in _chat(client, "draft", stream=True)
        if chunk.choices and chunk.choices[0].logprobs
        for t in chunk.choices[0].logprobs.content
    ]
    assert [(t.token, round(t.logprob, 5)) for t in streamed] == [(t.token, round(t.logprob, 5)) for t in whole]


def test_without_logprobs_there_are_none(client):
    reply = client.chat.completions.create(model="dense_target", messages=ASK, max_tokens=4)
    assert reply.choices[0].logprobs is None


def test_legacy_completions_give_tokens_offsets_and_top_dicts(client):
    reply = client.completions.create(model="dense_target", prompt="Once upon", max_tokens=8, logprobs=2)
    scores = reply.choices[0].logprobs
    assert len(scores.tokens) == len(scores.token_logprobs) == len(scores.text_offset) == 8
    assert scores.text_offset[0] == 0 and scores.text_offset == sorted(scores.text_offset)
    whole = [t for t in scores.tokens if not t.startswith("bytes:")]  # a random model splits characters
    assert all(t in reply.choices[0].text for t in whole)
    assert all(lp <= 0 for lp in scores.token_logprobs) and all(1 <= len(top) <= 3 for top in scores.top_logprobs)


def test_bad_logprob_settings_are_400s_naming_the_field(client):
    import openai

    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="dense_target", messages=ASK, max_tokens=2, logprobs=True, top_logprobs=21)
    assert refused.value.body["param"] == "top_logprobs"


def test_streamed_completion_offsets_are_the_whole_completions(client):
    """Each streamed batch's text_offset continues where the text of the tokens before it ends, even where a
    random model's token is only part of a character (its token string reads 'bytes:\\xNN')."""
    args = dict(model="dense_target", prompt="Once upon", max_tokens=16, logprobs=1)
    whole = client.completions.create(**args).choices[0].logprobs
    offsets = [
        o
        for chunk in client.completions.create(**args, stream=True)
        if chunk.choices and chunk.choices[0].logprobs
        for o in chunk.choices[0].logprobs.text_offset
    ]
    assert offsets == whole.text_offset and len(offsets) == 16
