"""MTP rows in a batch: the target's own head drafts for every MTP row in one call per draft step."""

from __future__ import annotations

from dataclasses import replace

import mlx.core as mx
import numpy as np
import pytest

from specchat.engine import Engine, GenerationConfig
from specchat.engine.batch.decoder import BatchDecoder, batch_refusal
from specchat.engine.events import RoundResult

from .batch_helpers import assert_samples_follow, lead_then_joiner, run_all, solo_tokens, verdicts
from .helpers import greedy, prompt_ids

TEXTS = ["Hello there, how are you", "Write a function", "Once upon a time", "def fib(n):", "The quick brown fox"]


@pytest.fixture(scope="module")
def engine(mtp_partial):
    """A hybrid target whose attached head agrees with it on part of its drafts."""
    return Engine.load(mtp_partial)


@pytest.mark.slow
def test_mtp_rows_joining_and_leaving_give_their_solo_output(engine):
    cfgs = [
        greedy("mtp", 3, n=30),
        replace(greedy("mtp", 2, n=24), num_draft_tokens="auto"),
        greedy("baseline", n=20),
        replace(greedy("lookup", 3, n=28), num_draft_tokens="auto"),
        greedy("mtp", 1, n=16),
    ]
    prompts = [prompt_ids(engine, t) for t in TEXTS]
    solo_runs = [list(engine.stream(p, c)) for p, c in zip(prompts, cfgs)]
    solo = [list(events[-1].tokens) for events in solo_runs]
    engine.reset()
    decoder = BatchDecoder(engine, max_batch=8)
    decoder.solo_lead = False
    added = run_all(decoder, {0: list(zip(prompts[:3], cfgs[:3])), 4: list(zip(prompts[3:], cfgs[3:]))})
    got = added[0] + added[4]
    for i, (g, expected) in enumerate(zip(got, solo)):
        assert g.tokens == expected, f"request {i} ({cfgs[i].mode}) differs from its solo output"
    for g, cfg, alone in zip(got, cfgs, solo_runs):
        stats = g.end.stats
        if cfg.mode == "mtp" and cfg.num_draft_tokens != "auto":  # auto may find plain steps cheaper here
            assert 0 < stats.accepted < stats.drafted  # the partial head misses some
            assert stats.batch_rows_max >= 2
            # a fixed K drafts what it drafts alone: the head read the same hidden state every round
            assert verdicts(g.events) == verdicts(alone)


def test_a_lead_on_mtp_moves_into_the_batch_and_keeps_its_solo_output(engine):
    cfg = replace(greedy("mtp", 3, n=36), num_draft_tokens="auto")
    lead_prompt, other_prompt = prompt_ids(engine, TEXTS[0]), prompt_ids(engine, TEXTS[2])
    expected = [solo_tokens(engine, p, cfg) for p in (lead_prompt, other_prompt)]
    lead, other = lead_then_joiner(engine, (lead_prompt, other_prompt), cfg, lead_steps=3)
    assert [lead.tokens, other.tokens] == expected
    rounds = [e for e in other.events if isinstance(e, RoundResult)]
    assert sum(r.drafted for r in rounds) > 0 and lead.end.stats.batch_rows_max == 2


def test_a_follow_up_whose_prompt_was_all_cached_drafts_after_one_round(engine):
    """A follow-up that repeats a finished row's sequence finds every token held: no prefill brings the
    head its hidden state, so its first round takes no drafts and the verify pass brings it."""
    cfg = greedy("mtp", 3, n=14)
    prompt = prompt_ids(engine, TEXTS[1])
    engine.reset()
    first_decoder, second = BatchDecoder(engine, max_batch=4), BatchDecoder(engine, max_batch=4)
    first_decoder.solo_lead = second.solo_lead = False  # both in the batch: the first leaves its caches
    first = run_all(first_decoder, {0: [(prompt, cfg)]})[0][0]
    again_prompt = prompt + first.tokens
    again = run_all(second, {0: [(again_prompt, cfg)]})[0][0]
    rounds = [e for e in again.events if isinstance(e, RoundResult)]
    assert rounds[0].drafted == 0 and sum(r.drafted for r in rounds[1:]) > 0
    assert again.end.stats.cached_prompt_tokens == len(again_prompt) - 1
    engine.batch_carry.clear()
    assert again.tokens == solo_tokens(engine, again_prompt, cfg)


def test_mtp_with_the_heads_history_runs_alone(engine):
    assert batch_refusal(engine, greedy("mtp", 2)) is None
    assert "one request at a time" in batch_refusal(engine, replace(greedy("mtp", 2), mtp_history=True))


@pytest.mark.slow
def test_sampled_mtp_rows_keep_the_target_distribution(mtp_random_embedded):
    """E[log p(X)] equals -H(p) when X ~ p; 300 MTP rows with their own seeds, drafts from a random head."""
    engine = Engine.load(mtp_random_embedded)
    ids = prompt_ids(engine)
    model = engine.target.model
    logits, hidden = model(mx.array(ids)[None], return_hidden=True)
    p = np.array(mx.softmax(logits[0, -1].astype(mx.float32)))
    head = model.mtp_forward(hidden[:, -2:-1], mx.array([[ids[-1]]], dtype=mx.uint32))
    q = np.array(mx.softmax(head[0, -1].astype(mx.float32)))  # the head's first draft for the first token
    runs = 300
    decoder = BatchDecoder(engine, max_batch=runs)
    decoder.solo_lead = False
    cfg = GenerationConfig(mode="mtp", num_draft_tokens=2, max_tokens=1, temperature=1.0)
    added = run_all(decoder, {0: [(ids, replace(cfg, seed=s)) for s in range(runs)]})
    assert_samples_follow([g.tokens[0] for g in added[0]], p, q)
    assert sum(g.end.stats.drafted for g in added[0]) == runs  # every row drafted and was verified
