"""Prefill in chunks: progress arrives live, cancel acts between chunks; prompts beyond the context are refused."""

import json
import threading

import pytest

from specchat.engine import ConfigError, Engine, ErrorKind, Failed, Finished, PrefillProgress, TextChunk
from specchat.engine.loading import context_limit

from .helpers import greedy, prompt_ids

LONG = "def fibonacci(n):\n    " * 6


@pytest.fixture
def engine(hybrid_target, hybrid_draft_partial):
    return Engine.load(hybrid_target, hybrid_draft_partial)


def test_progress_arrives_chunk_by_chunk_before_the_first_token(engine):
    ids = prompt_ids(engine, LONG)
    engine.runner.prefill_chunk = 8
    seen_tokens_at_progress = []
    events = []
    for event in engine.stream(ids, greedy("draft", 3, n=6)):
        if isinstance(event, PrefillProgress) and event.model == "target":  # live: the chunks done so far
            seen_tokens_at_progress.append(len(engine.runner.tokens))
        events.append(event)
    progress = [e for e in events if isinstance(e, PrefillProgress) and e.model == "target"]
    todo = len(ids) - 1
    assert [p.done for p in progress] == [min(d, todo) for d in range(8, todo + 8, 8)]
    assert all(p.total == todo for p in progress) and seen_tokens_at_progress == [p.done for p in progress]
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TextChunk))
    assert first_text > events.index(progress[-1])
    unchunked = Engine.load(engine.target.path, engine.draft.path)
    assert list(events[-1].tokens) == unchunked.generate(ids, greedy("draft", 3, n=6)).tokens


def test_cancel_between_chunks_stops_before_any_token_and_keeps_the_next_call_exact(engine):
    ids = prompt_ids(engine, LONG)
    engine.runner.prefill_chunk = 8
    cancel = threading.Event()
    events = []
    for event in engine.stream(ids, greedy("baseline", n=6), cancel):
        events.append(event)
        if isinstance(event, PrefillProgress) and event.done == 16:
            cancel.set()
    assert [type(e) for e in events] == [PrefillProgress, PrefillProgress, Finished]
    final = events[-1]
    assert final.cancelled and final.tokens == () and final.stats.stop_reason == "cancelled"
    assert len(engine.runner.tokens) == 16  # the two chunks done stay cached
    again = engine.generate(ids, greedy("baseline", n=6))
    assert again.stats.cached_prompt_tokens == 16
    fresh = Engine.load(engine.target.path)
    assert list(again.tokens) == fresh.generate(ids, greedy("baseline", n=6)).tokens


def test_a_prompt_beyond_the_context_is_refused_before_any_work(engine):
    limit, source = context_limit(engine.target.config)
    assert (limit, source) == (32768, "text_config.max_position_embeddings")  # qwen3_5 nests it
    ids = prompt_ids(engine)
    engine.generate(ids, greedy("baseline", n=4))
    held = list(engine.runner.tokens)
    events = list(engine.stream([ids[0]] * (limit + 5), greedy("baseline", n=4)))
    assert len(events) == 1 and isinstance(events[0], Failed) and events[0].kind is ErrorKind.CONFIG
    assert "32773 tokens" in events[0].message and "at most 32768" in events[0].message
    assert "text_config.max_position_embeddings" in events[0].message
    assert engine.runner.tokens == held  # nothing ran, nothing was dropped
    with pytest.raises(ConfigError, match="32768"):
        engine.generate([ids[0]] * limit, greedy("baseline", n=4))


def test_the_reply_is_cut_where_the_context_ends(dense_target, tmp_path):
    small = tmp_path / "small_context"
    small.mkdir()
    for f in dense_target.iterdir():
        (small / f.name).symlink_to(f)
    config = json.loads((dense_target / "config.json").read_text())
    config["max_position_embeddings"] = 40
    (small / "config.json").unlink()
    (small / "config.json").write_text(json.dumps(config))
    engine = Engine.load(small)
    assert context_limit(engine.target.config) == (40, "max_position_embeddings")
    ids = prompt_ids(engine)
    result = engine.generate(ids, greedy("baseline", n=200))
    assert len(ids) + len(result.tokens) <= 40 and result.stats.stop_reason in ("length", "eos")
    assert context_limit({"vocab_size": 5}) is None
