"""The last row of a batch goes on on the engine's own loop, and comes back when another request joins."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specchat.engine import Engine
from specchat.engine.batch.decoder import BatchDecoder
from specchat.engine.events import Finished, TextChunk

from .batch_helpers import run_all, solo_tokens, submit
from .helpers import greedy, prompt_ids

PAIRS = [("dense_target", "dense_draft_partial"), ("hybrid_target", "hybrid_draft_partial")]
TEXTS = ["Hello there, how are you", "Write a function", "The quick brown fox jumps over the lazy dog and then"]


def streamed_text(events) -> str:
    return "".join(e.text for e in events if isinstance(e, TextChunk))


def step_until(decoder: BatchDecoder, done, limit: int = 10_000) -> None:
    for _ in range(limit):
        if done():
            return
        decoder.step()
    raise AssertionError("the decoder never got there")


@pytest.mark.parametrize("target_name,draft_name", PAIRS)
@pytest.mark.parametrize("mode", ["draft", "lookup", "baseline"])
def test_the_row_left_alone_finishes_on_the_solo_loop_with_its_solo_output(request, target_name, draft_name, mode):
    engine = Engine.load(request.getfixturevalue(target_name), request.getfixturevalue(draft_name))
    long_cfg = replace(greedy(mode, 4, n=48), num_draft_tokens="auto") if mode != "baseline" else greedy(n=48)
    short_cfg = greedy("draft", 3, n=12)  # read first (the shorter prompt), still running when the long one joins
    long_prompt, short_prompt = prompt_ids(engine, TEXTS[0]), prompt_ids(engine, TEXTS[1])
    solo_events = list(engine.stream(long_prompt, long_cfg))
    expected_short = solo_tokens(engine, short_prompt, short_cfg)
    engine.reset()
    decoder = BatchDecoder(engine, max_batch=4)
    long, short = submit(decoder, long_prompt, long_cfg), submit(decoder, short_prompt, short_cfg)
    step_until(decoder, lambda: short.end is not None)
    step_until(decoder, lambda: decoder.lead is not None or long.end is not None)
    assert long.end is None, "the long row ended before it could go back to the solo loop"
    assert not decoder.rows and decoder.target.held == []  # it left the batch, caches and all
    run_all(decoder)
    assert short.tokens == expected_short
    assert long.tokens == list(solo_events[-1].tokens)
    assert streamed_text(long.events) == streamed_text(solo_events)
    assert sum(isinstance(e, Finished) for e in long.events) == 1
    stats = long.end.stats
    assert stats.generated_tokens == len(long.tokens) and stats.batch_rows_max == 2


@pytest.mark.slow
@pytest.mark.parametrize("target_name,draft_name", PAIRS)
def test_a_newcomer_brings_the_solo_tail_back_into_the_batch(request, target_name, draft_name):
    engine = Engine.load(request.getfixturevalue(target_name), request.getfixturevalue(draft_name))
    cfg = replace(greedy("draft", 4, n=60), num_draft_tokens="auto")
    short_cfg = greedy("draft", 3, n=6)
    prompts = [prompt_ids(engine, t) for t in TEXTS]
    expected = [solo_tokens(engine, prompts[0], cfg), solo_tokens(engine, prompts[2], cfg)]
    engine.reset()
    decoder = BatchDecoder(engine, max_batch=4)
    long, short = submit(decoder, prompts[0], cfg), submit(decoder, prompts[1], short_cfg)
    step_until(decoder, lambda: short.end is not None and decoder.lead is not None)
    before = len(long.end.tokens) if long.end else len([e for e in long.events if isinstance(e, TextChunk)])
    assert long.end is None and before > 0
    late = submit(decoder, prompts[2], cfg)
    run_all(decoder)
    assert [long.tokens, late.tokens] == expected
    assert long.end.stats.generated_tokens == len(long.tokens)
    assert late.end.stats.batch_rows_max == 2 and long.end.stats.batch_rows_max == 2
