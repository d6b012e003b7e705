"""Rows of different drafters in one batch: each starts from its own mode's acceptance, and a lookup row drafts
no deeper than the K its round was priced at (the early stop's extra reach is for drafts it can cut)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from specchat.engine import Engine
from specchat.engine.batch import batch_k, newcomer_prefill
from specchat.engine.batch.batch_k import BatchK, RowAcceptance
from specchat.engine.batch.decoder import BatchDecoder
from specchat.engine.draft_stop import StopCosts
from specchat.engine.events import RoundResult
from specchat.engine.knowledge import VERSION, batch_knowledge, learn_batch

from .batch_helpers import run_all, solo_tokens
from .helpers import greedy, prompt_ids


def test_a_new_row_starts_from_the_acceptance_of_rows_of_its_own_mode():
    controller = BatchK()
    for _ in range(20):  # draft-model rows take 9 drafts of 10, lookup rows' copies are refused at once
        controller.observe_row(RowAcceptance(), 10, 9, "draft")
        controller.observe_row(RowAcceptance(), 4, 0, "lookup")
    lookup, draft = controller.new_row(mode="lookup"), controller.new_row(mode="draft")
    assert lookup.rate < 0.05 and draft.rate > 0.85
    pooled = controller.pooled.rate
    assert 0.3 < pooled < 0.85 and controller.new_row(mode="mtp").rate == pytest.approx(pooled)  # no MTP row yet
    assert controller.pooled_rate("lookup") == pytest.approx(lookup.rate)


def test_a_request_that_ran_alone_adds_its_drafts_to_its_modes_pool():
    controller = BatchK()
    controller.new_row(accepted=2, checked=40, mode="lookup")
    assert controller.pooled_rate("lookup") == pytest.approx(0.05)
    assert controller.pooled_rate("draft") == pytest.approx(controller.pooled.rate)


def test_a_lookup_row_drafts_no_deeper_than_the_k_its_round_was_priced_at(request, monkeypatch):
    """With the early stop in reach, a round priced at K lets the draft model draft K + policy.stop_reach (the stop
    cuts what does not pay); a lookup row's copy is not cut by it, so it stays at K. Every output stays its solo one."""
    engine = Engine.load(request.getfixturevalue("dense_target"), request.getfixturevalue("dense_draft_partial"))
    monkeypatch.setattr(
        batch_k.BatchK, "_stop", lambda self, rates, k: (StopCosts(0.0, 0.0), self.confidence) if k else None
    )
    monkeypatch.setattr(newcomer_prefill, "draft_prefill_pays", lambda *args, **kwargs: True)
    base = greedy("draft", 6, n=40)
    cfgs = [replace(base, num_draft_tokens="auto"), replace(base, mode="lookup", num_draft_tokens="auto")]
    prompts = [prompt_ids(engine, t) for t in ("Write a function", "one two three four one two three four one two")]
    solo = [solo_tokens(engine, p, c) for p, c in zip(prompts, cfgs)]
    engine.reset()
    decoder = BatchDecoder(engine, max_batch=4)
    decoder.solo_lead = False
    decoder.controller.choose = lambda rates, top=None, hopeful=None: 2  # every round priced at K = 2
    got = run_all(decoder, {0: list(zip(prompts, cfgs))})[0]
    assert [g.tokens for g in got] == solo
    draft_rounds, lookup_rounds = ([e for e in g.events if isinstance(e, RoundResult)] for g in got)
    assert max(r.drafted for r in draft_rounds) == 2 + decoder.controller.policy.stop_reach  # the stop's reach, taken
    assert lookup_rounds and max(r.drafted for r in lookup_rounds) == 2  # copies, at the priced K


def test_each_modes_pool_is_kept_with_the_pairs_knowledge():
    learner = BatchK()
    for _ in range(10):
        learner.observe_row(RowAcceptance(), 4, 0, "lookup")
        learner.observe_row(RowAcceptance(), 4, 4, "draft")
    data = json.loads(json.dumps({"version": VERSION, "batch": batch_knowledge(learner)}))
    learned = learn_batch(None, data)
    assert learned is not None
    for mode in ("lookup", "draft"):
        assert learned.new_row(mode=mode).rate == pytest.approx(learner.new_row(mode=mode).rate)
    assert learned.pooled_rate("lookup") < 0.1 < 0.9 < learned.pooled_rate("draft")


def test_a_mode_with_a_draft_or_two_of_evidence_does_not_decide_a_new_rows_start():
    controller = BatchK()
    controller.observe_row(RowAcceptance(), 1, 0, "lookup")  # one refused copy: its own rate would read 0
    assert controller.pooled.rate > 0.2
    assert controller.new_row(mode="lookup").rate == pytest.approx(controller.pooled.rate)
