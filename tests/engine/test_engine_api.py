"""The engine's public API: events, stats, stops, cancel, errors."""

import threading

import pytest

from specchat.engine import (
    Engine,
    EngineError,
    EngineThreadError,
    Failed,
    Finished,
    GenerationConfig,
    IncompatibleDraftError,
    ModelLoadError,
    RoundResult,
    TextChunk,
)
from specchat.engine.engine import whole_characters

from .helpers import greedy, prompt_ids


@pytest.fixture
def engine(hybrid_target, hybrid_draft_partial):
    return Engine.load(hybrid_target, hybrid_draft_partial)


def test_stream_events_add_up_to_the_result(engine):
    ids = prompt_ids(engine)
    events = list(engine.stream(ids, greedy("draft", 3, n=30)))
    chunks = [e for e in events if isinstance(e, TextChunk)]
    rounds = [e for e in events if isinstance(e, RoundResult)]
    final = events[-1]
    assert isinstance(final, Finished)
    assert [t for c in chunks for t in c.token_ids] == list(final.tokens)
    assert (
        "".join(c.text for c in chunks) == final.text == whole_characters(engine.tokenizer.decode(list(final.tokens)))
    )
    assert all(len(c.token_ids) == len(c.from_draft) for c in chunks)
    s = final.stats
    assert s.rounds == len(rounds) and s.drafted == sum(r.drafted for r in rounds)
    assert s.accepted == sum(r.accepted for r in rounds)
    assert sum(flag for c in chunks for flag in c.from_draft) <= s.accepted
    assert s.generated_tokens == len(final.tokens) and s.prompt_tokens == len(ids)
    assert s.acceptance_rate == pytest.approx(s.accepted / s.drafted)
    assert s.peak_memory_bytes > 0 and s.decode_tokens_per_s > 0 and s.ttft_s > 0
    assert rounds[0].num_draft_tokens == 3 and s.num_draft_tokens == 3
    assert all(r.drafted == r.num_draft_tokens <= 3 and r.draft_s >= 0 and r.verify_s > 0 for r in rounds)


def test_rejections_name_the_proposed_and_the_chosen_token(engine):
    events = list(engine.stream(prompt_ids(engine), greedy("draft", 4, n=40)))
    tokens = events[-1].tokens
    rejected = [e.rejection for e in events if isinstance(e, RoundResult) and e.rejection]
    assert rejected, "the partial draft was never rejected"
    for r in rejected:
        assert r.proposed != r.chosen
        if r.position < len(tokens):
            assert tokens[r.position] == r.chosen


def test_stops_at_max_tokens_and_at_eos(engine):
    ids = prompt_ids(engine)
    result = engine.generate(ids, greedy(n=5))
    assert len(result.tokens) == 5 and result.stats.stop_reason == "length"
    eos = engine.generate(ids, greedy(n=200))
    if eos.stats.stop_reason == "eos":
        assert not set(eos.tokens) & engine.tokenizer.eos_token_ids
    first_new = next(i for i in range(2, 5) if result.tokens[i] not in result.tokens[:i])
    engine.tokenizer.eos_token_ids = {result.tokens[first_new]}
    for mode in ("baseline", "draft"):
        cut = engine.generate(ids, greedy(mode, n=50))
        assert cut.tokens == result.tokens[:first_new] and cut.stats.stop_reason == "eos"


@pytest.mark.parametrize("mode", ["baseline", "draft"])
def test_cancel_then_continue_equals_an_uninterrupted_run(engine, mode):
    ids = prompt_ids(engine)
    full = engine.generate(ids, greedy(mode, 3, n=36)).tokens
    cancel = threading.Event()
    got = []
    for event in engine.stream(ids, greedy(mode, 3, n=36), cancel):
        if isinstance(event, TextChunk):
            got.extend(event.token_ids)
            if len(got) >= 10:
                cancel.set()
    assert event.cancelled and 10 <= len(got) < 36
    rest = engine.generate(ids + got, greedy(mode, 3, n=36 - len(got)))
    assert rest.stats.cached_prompt_tokens == len(ids) + len(got) - 1
    assert got + rest.tokens == full


def test_errors_arrive_as_events_and_the_engine_keeps_working(dense_target):
    engine = Engine.load(dense_target)
    ids = prompt_ids(engine)
    events = list(engine.stream(ids, greedy("draft")))
    assert isinstance(events[-1], Failed) and "no draft model loaded" in events[-1].message
    with pytest.raises(EngineError, match="no draft model"):
        engine.generate(ids, greedy("draft"))
    assert len(engine.generate(ids, greedy(n=4)).tokens) == 4


def test_vocab_mismatch_names_the_first_differing_token(dense_target, dense_other_vocab):
    with pytest.raises(IncompatibleDraftError, match=r"token id \d+ is '.*' in the target but '.*' in the draft"):
        Engine.load(dense_target, dense_other_vocab)


def test_special_token_mismatch_names_the_field(dense_target, dense_other_eos):
    with pytest.raises(IncompatibleDraftError, match="special token eos"):
        Engine.load(dense_target, dense_other_eos)


def test_bad_folders_get_messages_that_name_them(tmp_path):
    with pytest.raises(ModelLoadError, match="not found"):
        Engine.load(tmp_path / "nope")
    with pytest.raises(ModelLoadError, match="config.json is missing"):
        Engine.load(tmp_path)


def test_invalid_settings_are_refused():
    with pytest.raises(EngineError, match="mode must be one of"):
        GenerationConfig(mode="turbo")
    with pytest.raises(EngineError, match="top-p must be above 0 and up to 1, got 0"):
        GenerationConfig(top_p=0)


def test_a_call_from_another_thread_is_refused_and_the_caches_are_kept(hybrid_target, hybrid_draft_partial):
    """Only the owner thread may run the engine; a stray call raises and costs the owner nothing."""
    engine = Engine.load(hybrid_target, hybrid_draft_partial)
    ids = prompt_ids(engine)
    cfg = greedy("draft", 3, n=16)
    first = engine.generate(ids, cfg)
    errors = []

    def elsewhere():
        for call in (lambda: engine.generate(ids, cfg), engine.reset, lambda: next(engine.stream(ids, cfg))):
            try:
                call()
            except EngineThreadError as exc:
                errors.append(str(exc))

    worker = threading.Thread(target=elsewhere, name="stray")
    worker.start()
    worker.join()
    assert len(errors) == 3 and "'stray'" in errors[0] and "MainThread" in errors[0]
    again = engine.generate(ids, cfg)
    assert again.tokens == first.tokens
    assert again.stats.cached_prompt_tokens == len(ids) - 1  # the prefix cached before the stray calls


def test_adopt_moves_the_engine_to_another_thread(hybrid_target):
    engine = Engine.load(hybrid_target)
    ids = prompt_ids(engine)
    cfg = greedy("baseline", n=8)
    expected = engine.generate(ids, cfg).tokens
    results = []

    def owner():
        engine.adopt()
        results.append(engine.generate(ids, cfg).tokens)

    worker = threading.Thread(target=owner)
    worker.start()
    worker.join()
    assert results == [expected]
    with pytest.raises(EngineThreadError):
        engine.generate(ids, cfg)
