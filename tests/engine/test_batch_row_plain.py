"""A row whose drafts do not pay in the batch decodes plainly in it while the others draft."""

from dataclasses import replace

import pytest

from specchat.engine import Engine
from specchat.engine.batch.batch_choice import BatchShape, batch_shape
from specchat.engine.batch.batch_k import BatchK, RowAcceptance
from specchat.engine.batch.decoder import BatchDecoder
from specchat.engine.events import RoundResult
from specchat.engine.policy import DEFAULT_POLICY

from .batch_helpers import solo_tokens, submit
from .helpers import greedy, prompt_ids

NO_TRIES = replace(DEFAULT_POLICY, explore_every=10**6, max_explore_gap=10**6)  # no round tries another K


def seeded(sizes=(1, 2), verify=0.1, per_row=(0.001, 0.002), policy=NO_TRIES) -> BatchK:
    """A controller that measured these costs: a verify pass flat in K, a draft step per drafting rows."""
    controller = BatchK(policy=policy)
    for rows in sizes:
        controller.observe(rows, 0, verify, verify, 0)
        for k in (1, 2, 4):
            for m, step in enumerate(per_row[:rows], start=1):
                controller.observe(rows, k, verify + k * step, verify, m)
    return controller


def test_a_row_that_drafts_alone_is_left_plain_where_its_drafts_do_not_pay():
    controller = seeded()
    both = BatchShape.uniform(2)
    plan = controller.plan_rows([0.9, 0.02], 8, [0.92, 0.05], both)
    assert plan.k > 0 and plan.drafting == (True, False)
    assert controller.plan_rows([0.9, 0.8], 8, [0.92, 0.85], both).drafting == (True, True)  # both pay


def test_draft_model_and_lookup_rows_always_draft_when_the_batch_does():
    """A draft-model row is fed in the draft model's run whatever its K, and a lookup row drafts for nothing:
    leaving either plain saves no time, so both draft, however seldom their drafts are taken."""
    shape = batch_shape(["draft", "lookup", "mtp"], [None, None, None], [0.9, 0.02, 0.02])
    assert shape == BatchShape(3, (False, False, True), shared=1)
    plan = seeded(sizes=(3,), per_row=(0.001, 0.002, 0.003)).plan_rows([0.9, 0.02, 0.02], 8, [0.9, 0.05, 0.05], shape)
    assert plan.k > 0 and plan.drafting == (True, True, False)


def test_rows_with_their_own_k_count_in_the_shape():
    shape = batch_shape(["mtp", "draft", "baseline", "mtp"], [None, 3, 4, 0], [0.5, 0.5, 0.9, 0.9])
    assert shape.rows == 4 and shape.alone == (True,) and shape.shared == 1  # the draft row drafts its own K
    assert shape.others == pytest.approx((1 + 0.5 + 0.25 + 0.125) + 1 + 1)  # K = 3 at 0.5; two plain rows


def test_a_lookup_row_without_a_match_is_priced_as_a_plain_row():
    """A lookup row drafts no deeper than its match on its own text: with none this round, the round's worth is
    what the other rows' drafts give (here: a draft pass that costs more than a weak draft row returns)."""
    controller = seeded(sizes=(2,), verify=0.1, per_row=(0.03, 0.03))
    rates = [0.3, 0.95]  # a draft-model row that seldom matches, a lookup row that copies well
    matched = batch_shape(["draft", "lookup"], [None, None], rates, [None, 8])
    unmatched = batch_shape(["draft", "lookup"], [None, None], rates, [None, 0])
    assert unmatched.reach == (None, 0) and unmatched.depth(1, 4) == 0 and matched.depth(1, 4) == 4
    assert controller.plan_rows(rates, 8, rates, matched).k > 0
    assert controller.plan_rows(rates, 8, rates, unmatched).k == 0


@pytest.fixture(scope="module")
def engine(mtp_partial):
    """A hybrid target whose attached head agrees with it on part of its drafts."""
    return Engine.load(mtp_partial)


def test_in_a_batch_the_row_whose_drafts_never_match_steps_plainly_and_keeps_its_solo_output(engine):
    cfg = replace(greedy("mtp", 3, n=24), num_draft_tokens="auto")
    prompts = [prompt_ids(engine, t) for t in ("def fib(n):", "Once upon a time")]
    solo = [solo_tokens(engine, p, cfg) for p in prompts]
    engine.reset()
    engine.batch_carry.controller = seeded()
    decoder = BatchDecoder(engine, max_batch=4)
    decoder.solo_lead = False
    decoder.controller.observe = lambda *args: None  # the seeded costs decide, not the tiny model's timings
    rows = iter([RowAcceptance(270.0, 300.0), RowAcceptance(0.0, 300.0)])  # the second row's drafts never match
    decoder.controller.new_row = lambda accepted=0, checked=0, mode=None: next(rows)
    good, bad = (submit(decoder, p, cfg) for p in prompts)
    while decoder.active:
        decoder.step()
    assert [good.tokens, bad.tokens] == solo
    drafted = [[e.drafted for e in g.events if isinstance(e, RoundResult)] for g in (good, bad)]
    assert sum(d > 0 for d in drafted[0]) >= len(drafted[0]) // 2, drafted  # the good row drafts
    assert drafted[1] and set(drafted[1]) == {0}, drafted  # the bad one steps plainly, every round
