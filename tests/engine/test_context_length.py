"""The user's context length: a cap below the model's own limit that refuses a longer prompt, cuts a reply to the
room under it, and is itself refused above what the model holds."""

from dataclasses import asdict

import pytest

from specchat.engine import ConfigError, Engine, ErrorKind, Failed
from specchat.engine.owner import EngineHost, adopt_job, context_length_job
from specchat.engine.summary import stop_text

from .helpers import greedy, prompt_ids

CAP = 256
MODEL_LIMIT = 32768  # max_position_embeddings of the tiny models
LONG = "def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)\n" * 20


@pytest.fixture(scope="module")
def engine(dense_target, dense_draft_partial):
    return Engine.load(dense_target, dense_draft_partial)


@pytest.fixture(autouse=True)
def _uncapped(engine):
    engine.context_length = None
    yield
    engine.context_length = None


def prompt_of(engine: Engine, n: int) -> list[int]:
    ids = prompt_ids(engine, LONG)
    assert len(ids) >= n
    return ids[:n]


def test_the_window_is_the_models_until_a_cap_below_it_is_set(engine):
    assert engine.context_length is None
    assert engine.context_window() == (MODEL_LIMIT, "max_position_embeddings in config.json")
    engine.context_length = CAP
    assert engine.context_length == CAP and engine.context_window() == (CAP, "your context length setting")
    engine.context_length = MODEL_LIMIT  # as much as the model holds: its own limit applies
    assert engine.context_window() == (MODEL_LIMIT, "max_position_embeddings in config.json")


def test_a_prompt_over_the_cap_is_refused_naming_the_setting(engine):
    ids = prompt_of(engine, CAP)
    engine.generate(ids[:20], greedy(n=2))
    held = list(engine.runner.tokens)
    engine.context_length = CAP
    events = list(engine.stream(ids, greedy(n=4)))
    assert len(events) == 1 and isinstance(events[0], Failed) and events[0].kind is ErrorKind.CONFIG
    assert events[0].message == (
        f"the prompt is {CAP} tokens but dense_target takes at most {CAP} (your context length setting): "
        "shorten the conversation or start a new one, or raise the context length"
    )
    assert engine.runner.tokens == held  # refused before any model work
    engine.context_length = None
    assert isinstance(engine.generate(ids, greedy(n=1)).tokens, list)  # the model's own context takes it


@pytest.mark.parametrize("mode", ["baseline", "draft"])
def test_the_reply_is_cut_to_exactly_the_room_under_the_cap(engine, mode):
    ids = prompt_of(engine, CAP - 6)
    uncapped = engine.generate(ids, greedy(mode, k=4, n=6))
    assert len(uncapped.tokens) == 6 and stop_text(asdict(uncapped.stats)) == "max tokens (6)"
    engine.context_length = CAP
    capped = engine.generate(ids, greedy(mode, k=4, n=100))
    assert capped.tokens == uncapped.tokens  # exactly CAP - prompt tokens, the same ones
    assert capped.stats.stop_reason == "length" and capped.stats.max_tokens == 100
    assert stop_text(asdict(capped.stats)) == "the context is full"


def test_a_cap_above_what_the_model_holds_is_refused_with_both_numbers(engine):
    engine.context_length = CAP
    with pytest.raises(ConfigError) as refused:
        engine.context_length = MODEL_LIMIT + 1
    assert str(refused.value) == (
        f"context length {MODEL_LIMIT + 1} is more than dense_target holds: at most {MODEL_LIMIT} "
        "(max_position_embeddings in config.json)"
    )
    assert engine.context_length == CAP  # the refused value changed nothing
    for bad in (255, 0, True, 1024.0):
        with pytest.raises(ConfigError, match="^context length must be a whole number between 256 and 1048576"):
            engine.context_length = bad


def test_the_job_applies_a_cap_or_with_fit_keeps_the_models_own(engine):
    host = EngineHost()
    try:
        host.submit("adopt", adopt_job(engine)).result(timeout=60)
        assert host.submit("context", context_length_job(4096)).result(timeout=60) == 4096
        assert engine.context_length == 4096
        assert host.submit("context", context_length_job(MODEL_LIMIT * 2, fit=True)).result(timeout=60) == MODEL_LIMIT
        assert engine.context_length is None
        with pytest.raises(ConfigError, match=f"at most {MODEL_LIMIT}"):
            host.submit("context", context_length_job(MODEL_LIMIT * 2)).result(timeout=60)
    finally:
        host.shutdown()
        engine.adopt()  # back to this thread for the other tests
