"""Newcomers are read shortest first, for as long as the last round took (a chunk at least) per step, and a
cancelled one ends at the next step wherever it waits."""

from __future__ import annotations

import threading

import pytest

from specchat.engine import Engine
from specchat.engine.batch.decoder import BatchDecoder, BatchRequest
from specchat.engine.events import Finished, PrefillProgress, TextChunk
from specchat.engine.modes import StopReason

from .batch_helpers import solo_tokens
from .helpers import greedy, prompt_ids

LONG = "The quick brown fox jumps over the lazy dog. " * 8


@pytest.fixture(scope="module")
def engine(dense_target, dense_draft_partial):
    return Engine.load(dense_target, dense_draft_partial)


def tagged(log: list, tag: str):
    """A request's emit that records (tag, event) in one shared log, in the order events came."""
    return lambda event: log.append((tag, event))


def test_a_short_prompt_is_answered_while_a_long_one_that_came_first_is_still_read(engine):
    cfg = greedy("draft", 3, n=6)
    long, short = prompt_ids(engine, LONG), prompt_ids(engine, "Hi")
    assert len(long) > 8 * len(short)
    solo = {"long": solo_tokens(engine, long, cfg), "short": solo_tokens(engine, short, cfg)}
    engine.reset()
    decoder = BatchDecoder(engine, max_batch=4)
    decoder.solo_lead, decoder.prefill_chunk = False, 4
    log: list = []
    for tag, prompt in (("long", long), ("short", short)):  # the long one comes first
        decoder.add(BatchRequest(prompt, cfg, threading.Event(), tagged(log, tag)))
    while decoder.active:
        decoder.step()
    first_short_text = next(i for i, (tag, e) in enumerate(log) if tag == "short" and isinstance(e, TextChunk))
    last_long_read = max(i for i, (tag, e) in enumerate(log) if tag == "long" and isinstance(e, PrefillProgress))
    assert first_short_text < last_long_read
    ends = {tag: e for tag, e in log if isinstance(e, Finished)}
    assert {tag: list(e.tokens) for tag, e in ends.items()} == solo


def test_a_cancelled_newcomer_ends_at_the_next_step_behind_a_shorter_one(engine):
    cfg = greedy("draft", 3, n=6)
    engine.reset()  # no finished row's caches: the long prompt is read from its start
    decoder = BatchDecoder(engine, max_batch=4)
    decoder.solo_lead, decoder.prefill_chunk = False, 4
    log: list = []
    cancel = threading.Event()
    decoder.add(BatchRequest(prompt_ids(engine, LONG), cfg, cancel, tagged(log, "long")))
    decoder.add(BatchRequest(prompt_ids(engine, "Hi there"), cfg, threading.Event(), tagged(log, "short")))
    decoder.step()  # the short one's first chunk: the long one waits
    assert not [e for tag, e in log if tag == "long"]
    cancel.set()
    decoder.step()
    ends = [e for tag, e in log if tag == "long" and isinstance(e, Finished)]
    assert len(ends) == 1 and ends[0].stats.stop_reason == StopReason.CANCELLED
    while decoder.active:
        decoder.step()
    assert len([e for tag, e in log if tag == "long" and isinstance(e, Finished)]) == 1


def rounds_taking(decoder: BatchDecoder, seconds: float) -> None:
    """Make every round of the decoder count as `seconds` long, as the next prefill step reads it."""
    run = decoder._round

    def timed() -> None:
        run()
        decoder.round_s = seconds

    decoder._round = timed


def test_a_step_reads_newcomers_for_as_long_as_the_last_round_took(engine):
    cfg = greedy("draft", 3, n=24)  # the short row still runs when the long ones come
    prompts = {
        "short": prompt_ids(engine, "Hi"),
        "dear": prompt_ids(engine, LONG),
        "cheap": prompt_ids(engine, LONG[3:]),
    }
    solo = {tag: solo_tokens(engine, prompt, cfg) for tag, prompt in prompts.items()}
    engine.reset()
    decoder = BatchDecoder(engine, max_batch=4)
    decoder.solo_lead, decoder.prefill_chunk = False, 4
    log: list = []

    def reads(tag: str) -> int:
        return len([e for t, e in log if t == tag and isinstance(e, PrefillProgress)])

    decoder.add(BatchRequest(prompts["short"], cfg, threading.Event(), tagged(log, "short")))
    rounds_taking(decoder, 3600.0)  # a round dearer than any prefill: a step reads until nobody waits
    while not decoder.rows:
        decoder.step()
    decoder.add(BatchRequest(prompts["dear"], cfg, threading.Event(), tagged(log, "dear")))
    decoder.step()
    assert not decoder.waiting and reads("dear") > 8  # every chunk in one step
    rounds_taking(decoder, 0.0)  # a round cheaper than any chunk: one chunk a step
    decoder.step()
    decoder.add(BatchRequest(prompts["cheap"], cfg, threading.Event(), tagged(log, "cheap")))
    decoder.step()
    assert reads("cheap") == 1
    while decoder.active:
        decoder.step()
    ends = {tag: list(e.tokens) for tag, e in log if isinstance(e, Finished)}
    assert ends == solo


def test_a_lockstep_decoder_reads_one_chunk_a_step_however_dear_the_rounds(engine):
    """A cluster's ranks step together: how much a step reads must not hang on a rank's own clock."""
    cfg = greedy("draft", 3, n=24)
    engine.reset()
    decoder = BatchDecoder(engine, max_batch=4)
    decoder.solo_lead, decoder.prefill_chunk, decoder.lockstep = False, 4, True
    log: list = []
    decoder.add(BatchRequest(prompt_ids(engine, "Hi"), cfg, threading.Event(), tagged(log, "short")))
    rounds_taking(decoder, 3600.0)
    while not decoder.rows:
        decoder.step()
    decoder.add(BatchRequest(prompt_ids(engine, LONG), cfg, threading.Event(), tagged(log, "long")))
    decoder.step()
    assert len([e for t, e in log if t == "long" and isinstance(e, PrefillProgress)]) == 1
