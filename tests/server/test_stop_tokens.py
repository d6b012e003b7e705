"""A stop sequence cuts the text, and with it the tokens: usage counts and logprobs cover only the tokens
behind the text sent, the same whether a round emitted one token or five past the stop."""

import pytest

from specchat.engine import GenerationConfig

from .conftest import reference

PROMPT = "Once upon a time"
MODES = [("baseline", 1), ("draft", 4), ("lookup", 4)]


def stop_point(host, ids) -> tuple[str, str, int]:
    """A stop sequence taken from the middle of the plain reply: (stop, text before it, tokens behind that)."""
    ref = reference(host, ids, GenerationConfig(max_tokens=40))
    text = ref.text
    for start in range(len(text) // 3, len(text) - 3):
        stop = text[start : start + 3]
        if text.find(stop) == start and stop.strip():
            break
    decode = host.engine.tokenizer.decode
    behind = next(n for n in range(len(ref.tokens) + 1) if len(decode(ref.tokens[:n])) >= start)
    return stop, text[:start], behind


@pytest.fixture(scope="module")
def stop_case(host):
    return stop_point(host, list(host.engine.tokenizer.encode(PROMPT)))


def completion(client, mode, k, stop, stream):
    extra = {"speculation": {"mode": mode, "num_draft_tokens": k}}
    args = dict(model="dense_target", prompt=PROMPT, max_tokens=40, logprobs=2, stop=[stop], extra_body=extra)
    if not stream:
        answer = client.completions.create(**args)
        choice = answer.choices[0]
        return choice.text, choice.finish_reason, answer.usage.completion_tokens, choice.logprobs.tokens
    chunks = list(client.completions.create(**args, stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    tokens = [t for c in chunks if c.choices and c.choices[0].logprobs for t in c.choices[0].logprobs.tokens]
    reason = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason][-1]
    return text, reason, chunks[-1].usage.completion_tokens, tokens


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("mode,k", MODES)
def test_usage_and_logprobs_stop_where_the_text_stops(client, stop_case, mode, k, stream):
    stop, before, behind = stop_case
    text, reason, completion_tokens, tokens = completion(client, mode, k, stop, stream)
    assert text == before and reason == "stop"
    assert completion_tokens == behind  # 11 instead of 7 at K=4 when every emitted token was counted
    assert len(tokens) == behind
    *_, plain_tokens = completion(client, "baseline", 1, stop, False)
    assert tokens == plain_tokens  # the same tokens behind the same text, whatever the mode
