"""Continuing a reply cut off at max tokens: the prompt is the conversation with the turn opened and the reply's
own token ids, so greedy N tokens then M more equal one greedy reply of N + M, token for token."""

import pytest

from specchat.engine import Engine, GenerationConfig
from specchat.engine.owner import EngineHost, JobFinished, JobProgress, adopt_job, reply_job
from specchat.engine.prompt import chat_prompt_ids, continued_reply_ids

CHAT = [{"role": "user", "content": "Tell me a story about a lighthouse."}]
FIRST, MORE = 7, 9


def continued(messages, reply):
    """The conversation ending with the reply to continue, carrying its token ids."""
    return [*messages, {"role": "assistant", "content": reply.text, "token_ids": list(reply.tokens)}]


@pytest.mark.parametrize("thinking", [False, True])
def test_the_prompt_is_the_turn_opening_then_the_replys_own_ids(dense_target, thinking):
    tokenizer = Engine.load(dense_target).tokenizer
    opened = chat_prompt_ids(tokenizer, CHAT, "Be brief.", thinking)
    reply = [11, 12, 13]
    messages = [*CHAT, {"role": "assistant", "content": "ignored: the ids decide", "token_ids": reply}]
    assert chat_prompt_ids(tokenizer, messages, "Be brief.", thinking) == opened + reply
    without_ids = [*CHAT, {"role": "assistant", "content": "Once"}]  # no ids: the template's own continuation
    assert continued_reply_ids(without_ids) is None


@pytest.mark.parametrize("bad", [["1"], [1.5], "12", [True]])
def test_token_ids_that_are_not_ids_are_refused_naming_them(bad):
    with pytest.raises(ValueError, match="token_ids that are not a list of token ids"):
        continued_reply_ids([*CHAT, {"role": "assistant", "content": "x", "token_ids": bad}])


@pytest.mark.parametrize(("mode", "pair"), [("baseline", False), ("draft", True)])
def test_greedy_n_then_m_more_equals_one_greedy_reply_of_n_plus_m(dense_target, dense_draft_partial, mode, pair):
    draft = dense_draft_partial if pair else None
    engine = Engine.load(dense_target, draft)
    tokenizer = engine.tokenizer
    first = engine.generate(chat_prompt_ids(tokenizer, CHAT), GenerationConfig(mode, max_tokens=FIRST))
    assert first.stats.stop_reason == "length" and len(first.tokens) == FIRST
    more = engine.generate(chat_prompt_ids(tokenizer, continued(CHAT, first)), GenerationConfig(mode, max_tokens=MORE))
    whole = Engine.load(dense_target, draft).generate(
        chat_prompt_ids(tokenizer, CHAT), GenerationConfig(mode, max_tokens=FIRST + MORE)
    )
    assert len(whole.tokens) == FIRST + MORE  # the tiny model does not end its turn this early
    assert first.tokens + more.tokens == whole.tokens
    assert tokenizer.decode(first.tokens + more.tokens) == tokenizer.decode(whole.tokens)


def test_the_reply_job_continues_exactly_on_the_engine_host(dense_target):
    host = EngineHost()
    try:
        host.submit("load", adopt_job(Engine.load(dense_target))).result(60)
        first = finished(host, reply_job(CHAT, GenerationConfig(max_tokens=FIRST)))
        more = finished(host, reply_job(continued(CHAT, first), GenerationConfig(max_tokens=MORE)))
        fresh = Engine.load(dense_target)
        ids = chat_prompt_ids(fresh.tokenizer, CHAT, enable_thinking=False)  # as reply_job builds it
        whole = fresh.generate(ids, GenerationConfig(max_tokens=FIRST + MORE))
        assert list(first.tokens) + list(more.tokens) == whole.tokens
    finally:
        assert host.shutdown(30)


def finished(host, work):
    """Run a reply job to its end and return its Finished engine event."""
    events = []
    handle = host.submit("reply", work, listener=events.append)
    handle.wait(120)
    done = [e.event for e in events if isinstance(e, JobProgress)]
    assert any(isinstance(e, JobFinished) for e in events), events
    return done[-1]
