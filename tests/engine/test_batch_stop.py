"""The batch's early stop: a batched round stops drafting where its rows' drafts are unlikely to pay."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specchat.engine import Engine
from specchat.engine.batch import batch_k, newcomer_prefill
from specchat.engine.batch.batch_k import BatchK
from specchat.engine.batch.batch_stop import BatchStop
from specchat.engine.batch.decoder import BatchDecoder
from specchat.engine.draft_stop import ConfidenceModel, StopCosts
from specchat.engine.events import RoundResult

from .batch_helpers import run_all, solo_tokens
from .helpers import greedy, prompt_ids

TEXTS = ["Hello there, how are you", "Write a function", "The quick brown fox jumps over the lazy dog and then"]


def test_sure_rows_draft_on_and_unsure_ones_stop():
    costs = StopCosts(keep_at=0.5, go_on_at=0.8)
    sure = BatchStop(costs, ConfidenceModel(), ["full", "full"])
    assert all(sure.take([0.99, 0.97]) == (True, True) for _ in range(3))
    unsure = BatchStop(costs, ConfidenceModel(), ["full", "full"])
    unsure.take([0.5, 0.4])  # the first step is always kept
    assert unsure.take([0.3, 0.3]) == (False, False) and unsure.stopped_early
    assert unsure.confidences == [[0.5], [0.4]]


def test_where_a_verify_position_costs_nothing_the_batch_drafts_on():
    """A Mac-like batch: verifying K+1 tokens costs what verifying one does, and draft steps are cheap."""
    controller = BatchK(k_max=6)
    controller.observe(2, 0, 0.95)
    for k in (1, 2, 3, 1, 2, 3):
        controller.observe(2, k, 1.0 + 0.01 * k, verify_s=1.0)
    k, stop = controller.plan([0.7, 0.7], 6, [0.8, 0.8])
    assert stop is not None and stop[0].keep_at == pytest.approx(0.0, abs=1e-9)
    confident = BatchStop(stop[0], stop[1], ["full", "full"])
    assert all(confident.take([0.6, 0.6])[0] for _ in range(k))


def test_on_a_cpu_like_batch_the_stop_charges_each_verify_position():
    controller = BatchK(k_max=6)
    controller.observe(2, 0, 0.9)
    for k in (1, 2, 3, 1, 2, 3):
        controller.observe(2, k, 1.0 + 0.3 * k, verify_s=0.6 + 0.2 * k)
    _, stop = controller.plan([0.7, 0.7], 6, [0.8, 0.8])
    assert stop is not None
    rate = stop[0].keep_at / 0.2  # tokens per second the batch is expected to reach
    assert stop[0].go_on_at == pytest.approx(rate * 0.3)


@pytest.mark.parametrize(
    "target_name,draft_name", [("dense_target", "dense_draft_partial"), ("hybrid_target", "hybrid_draft_partial")]
)
def test_rows_that_stop_early_keep_their_solo_output(request, monkeypatch, target_name, draft_name):
    """Early stops with fixed costs (the tiny models' timings are all overhead): drafting ends at unsure
    tokens in some rounds, the draft model's caches keep only what it was fed, and every row's output
    stays its solo output."""
    engine = Engine.load(request.getfixturevalue(target_name), request.getfixturevalue(draft_name))
    monkeypatch.setattr(
        batch_k.BatchK, "_stop", lambda self, rates, k: (StopCosts(0.15, 0.35), self.confidence) if k else None
    )
    # the draft model reads every prompt: whether its read pays is priced from measured times, and on a busy
    # machine a slow read left the rows plain, with nothing for the stop to act on
    monkeypatch.setattr(newcomer_prefill, "draft_prefill_pays", lambda *args, **kwargs: True)
    cfg = replace(greedy("draft", 6, n=40), num_draft_tokens="auto")
    prompts = [prompt_ids(engine, t) for t in TEXTS]
    solo = [solo_tokens(engine, p, cfg) for p in prompts]
    engine.reset()
    decoder = BatchDecoder(engine, max_batch=4)
    decoder.solo_lead = False
    decoder.controller.choose = lambda rates, top=None, hopeful=None: 2  # draft every round: the stop decides
    got = run_all(decoder, {0: [(p, cfg) for p in prompts]})[0]
    assert [g.tokens for g in got] == solo
    rounds = [e for g in got for e in g.events if isinstance(e, RoundResult)]
    stopped = [r for r in rounds if r.stopped_early]
    assert stopped and any(r.drafted == 4 for r in rounds), "the stop never acted, or never let a round run to K"
    assert all(len(r.confidences) == r.drafted for r in rounds)
