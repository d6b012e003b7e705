"""A prompt with a token id outside the vocabulary is refused before any model work, alone and in a batch:
the model's gather would read past its embedding table (a crash, or garbage)."""

import pytest

from specchat.engine import Engine, ErrorKind, Failed, Finished
from specchat.engine.batch.decoder import BatchDecoder

from .batch_helpers import run_all, submit
from .helpers import greedy, prompt_ids

BAD_IDS = [-1, 384, 999_999_999, 2**63]  # 384: the tiny models' vocabulary size


@pytest.fixture(scope="module")
def engine(dense_target, dense_draft_partial):
    return Engine.load(dense_target, dense_draft_partial)


def test_the_vocabulary_limit_is_what_every_loaded_model_reads(engine):
    assert engine.vocab_limit == 384


@pytest.mark.parametrize("bad", BAD_IDS)
def test_the_solo_loop_refuses_an_id_past_the_vocabulary_and_keeps_its_caches(engine, bad):
    ids = prompt_ids(engine)
    first = list(engine.stream(ids, greedy("draft", 2, n=6)))[-1]
    assert isinstance(first, Finished)
    cached = list(engine.runner.tokens)
    failed = list(engine.stream([*ids, bad], greedy("draft", 2, n=6)))
    assert len(failed) == 1 and isinstance(failed[0], Failed), failed
    assert failed[0].kind == ErrorKind.CONFIG
    assert f"prompt token {len(ids)} is {bad}" in failed[0].message and "0 to 383" in failed[0].message
    assert engine.runner.tokens == cached  # nothing was read, nothing dropped
    again = list(engine.stream(ids, greedy("draft", 2, n=6)))[-1]
    assert again.tokens == first.tokens and again.stats.cached_prompt_tokens == len(ids) - 1


def test_a_batch_refuses_the_bad_request_alone(engine):
    ids = prompt_ids(engine)
    decoder = BatchDecoder(engine, max_batch=4)
    good = submit(decoder, ids, greedy("draft", 2, n=8))
    decoder.step()  # the first request leads; the next ones join the batch
    bad = submit(decoder, [*ids[:3], 384], greedy("draft", 2, n=8))
    also_good = submit(decoder, ids[:5], greedy("draft", 2, n=8))
    run_all(decoder)
    assert isinstance(bad.end, Failed) and bad.end.kind == ErrorKind.CONFIG and "is 384" in bad.end.message
    assert isinstance(good.end, Finished) and isinstance(also_good.end, Finished)
