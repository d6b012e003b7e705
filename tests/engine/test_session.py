"""Chat sessions reuse caches across turns and still equal a from-scratch run."""

import pytest

from specchat.engine import Engine, Finished, GenerationConfig
from specchat.engine.session import ChatSession


def reply(events) -> Finished:
    return [e for e in events if isinstance(e, Finished)][-1]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["baseline", "draft"])
def test_second_turn_reuses_the_cache_and_equals_a_fresh_engine(hybrid_target, hybrid_draft_partial, mode):
    cfg = GenerationConfig(mode=mode, num_draft_tokens=3, max_tokens=20)
    session = ChatSession(Engine.load(hybrid_target, hybrid_draft_partial), system_prompt="Be brief.")
    reply(session.send("Write a function.", cfg))
    second = reply(session.send("Now explain it.", cfg))
    assert second.stats.cached_prompt_tokens > 0
    fresh = Engine.load(hybrid_target, hybrid_draft_partial)
    ids = session.prompt_ids(session.messages[:-1])
    assert fresh.generate(ids, cfg).tokens == list(second.tokens)


def test_editing_an_earlier_message_truncates_and_matches_from_scratch(hybrid_target, hybrid_draft_partial):
    cfg = GenerationConfig(mode="draft", num_draft_tokens=2, max_tokens=16)
    session = ChatSession(Engine.load(hybrid_target, hybrid_draft_partial))
    reply(session.send("first question", cfg))
    reply(session.send("second question", cfg))
    edited = reply(session.edit(0, "a different first question", cfg))
    assert [m["role"] for m in session.messages] == ["user", "assistant"]
    fresh = Engine.load(hybrid_target, hybrid_draft_partial)
    assert fresh.generate(session.prompt_ids(session.messages[:-1]), cfg).tokens == list(edited.tokens)


def test_template_and_thinking_switch(dense_target):
    session = ChatSession(Engine.load(dense_target), enable_thinking=False)
    session.messages.append({"role": "user", "content": "hi"})
    text = session.engine.tokenizer.decode(session.prompt_ids())
    assert text.startswith("<|im_start|>user\nhi<|im_end|>") and text.endswith("<think>\n\n</think>\n\n")
    session.enable_thinking = True
    assert session.engine.tokenizer.decode(session.prompt_ids()).endswith("<|im_start|>assistant\n")
