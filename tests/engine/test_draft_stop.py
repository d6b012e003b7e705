"""Drafts that stop when the drafter is unsure: the confidence model, the round plan, exactness when sampling,
and the engine's drafters (identical greedy output, the stop reported in the rounds)."""

import mlx.core as mx
import numpy as np
import pytest

from specchat.engine import Engine, GenerationConfig
from specchat.engine.autok import AutoK
from specchat.engine.draft_stop import ConfidenceModel, RoundPlan, StopCosts
from specchat.engine.events import RoundResult
from specchat.engine.lookup import match_continuation
from specchat.engine.sampling import Sampler
from specchat.engine.verify import verify_sampled

from .costed_autok import CostedAutoK
from .helpers import prompt_ids
from .test_sampling import chi_square


def test_the_model_learns_that_unsure_drafts_miss_and_sure_ones_hit():
    model = ConfidenceModel(overall=0.6)
    # until measured: the draft's own probability, a little lifted (a greedy target picks the likeliest token too)
    assert model.p("match", 0.9) == pytest.approx(model.calibrated(0.9)) and 0.9 < model.calibrated(0.9) < 0.93
    for _ in range(200):
        model.observe("match", 0.95, True)
        model.observe("match", 0.4, False)
        model.observe("miss", 0.4, True)  # after a miss the same confidence hits (misses come alone)
    assert model.p("match", 0.96) > 0.9 and model.p("match", 0.45) < 0.1
    assert model.p("miss", 0.45) > 0.9  # what happened just before changes the estimate


def test_what_one_confidence_teaches_moves_the_estimate_at_confidences_never_seen():
    """The calibration fit lends every bin what the others measured: a draft whose 0.6-0.8 guesses are all
    accepted is believed more at 0.4 too, and one whose guesses there all miss less."""
    trusted, doubted = ConfidenceModel(), ConfidenceModel()
    for _ in range(100):
        for confidence in (0.6, 0.7, 0.8):
            trusted.observe("match", confidence, True)
            doubted.observe("match", confidence, False)
    fresh = ConfidenceModel().p("match", 0.4)
    assert trusted.p("match", 0.4) > fresh + 0.2 and doubted.p("match", 0.4) < fresh - 0.2


def test_a_plan_keeps_sure_tokens_and_stops_at_the_first_unsure_one():
    plan = RoundPlan(8, "full", StopCosts(keep_at=0.1, go_on_at=0.5), ConfidenceModel(overall=0.8))
    taken = [plan.take(c) for c in (0.99, 0.98, 0.97, 0.3)]
    assert taken[:3] == [(True, True)] * 3
    assert taken[3] == (True, False) and plan.stopped_early and plan.stop_confidence == 0.3
    assert plan.kept() == 4 and plan.confidences == [0.99, 0.98, 0.97, 0.3]
    unsure = RoundPlan(8, "full", StopCosts(keep_at=0.5, go_on_at=0.5), ConfidenceModel(overall=0.8))
    assert unsure.take(0.99) == (True, True)
    assert unsure.take(0.2) == (False, False)  # worth less than it adds to the verify pass: dropped
    assert unsure.kept() == 1
    fixed = RoundPlan(3, "full", None)
    assert [fixed.take(0.01) for _ in range(3)] == [(True, True), (True, True), (True, False)]
    assert not fixed.stopped_early


def _trained(verify: dict[int, float]) -> AutoK:
    """A controller that measured a 0.05 s draft step and these verify costs by K, at 80% acceptance."""
    auto = AutoK(k_max=8)
    for _ in range(20):
        for k, seconds in verify.items():
            auto.observe(k, k - 1, 0.05 * k, seconds, confidences=[0.9] * k)
    return auto


def test_where_verifying_more_tokens_costs_nothing_the_rule_drafts_further():
    flat = _trained({1: 0.50, 2: 0.50, 4: 0.50, 8: 0.50})  # a Mac's GPU: bound by reading the weights
    steep = _trained({1: 0.50, 2: 0.58, 4: 0.74, 8: 1.06})  # this CPU: every token costs
    flat.choose(), steep.choose()
    assert flat.stop_costs().keep_at == 0.0 < steep.stop_costs().keep_at
    confidences = [0.97, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6]

    def drafted(auto: AutoK) -> int:
        plan = auto.plan()
        for c in confidences:
            keep, more = plan.take(c)
            if not (keep and more):
                break
        return plan.kept()

    assert drafted(flat) > drafted(steep)


def test_lookup_confidence_grows_with_the_match_and_its_agreement():
    seq = [1, 2, 3, 9, 1, 2, 3, 9, 1, 2, 3, 7, 1, 2, 3]
    tokens, confidence = match_continuation(seq, 2)
    assert tokens == [7, 1]  # what followed the most recent earlier [1, 2, 3]
    # a 3-gram of 4 (0.75), and only one of its three occurrences goes on with 7: a weak match
    assert confidence == [pytest.approx(0.75 / 3)] * 2
    repeat = [5, 6, 7, 8] * 3 + [5, 6, 7]
    tokens, confidence = match_continuation(repeat, 3)
    assert tokens == [8, 5, 6] and confidence == [1.0] * 3  # a whole 4-gram, and every occurrence agrees


# --- exactness at temperature > 0: the stop looks only at the draft's probabilities ---

P1 = np.array([0.5, 0.3, 0.15, 0.05])  # the target's first token
P2 = np.array([[0.1, 0.6, 0.2, 0.1], [0.7, 0.1, 0.1, 0.1], [0.25, 0.25, 0.25, 0.25], [0.1, 0.1, 0.1, 0.7]])
Q1 = np.array([0.25, 0.25, 0.25, 0.25])  # the draft's
Q2 = np.array([[0.9, 0.05, 0.03, 0.02], [0.3, 0.3, 0.2, 0.2], [0.05, 0.05, 0.85, 0.05], [0.4, 0.3, 0.2, 0.1]])


def _two_tokens(rng, sampler: Sampler) -> tuple[int, int]:
    """One speculative round of up to two drafts whose second stops where the draft is unsure; the second token
    comes from the next (plain) round when the first round emitted one."""
    plan = RoundPlan(2, "full", StopCosts(keep_at=0.0, go_on_at=0.6), ConfidenceModel(overall=0.7))
    d1 = int(rng.choice(4, p=Q1))
    drafts, probs = [d1], [Q1]
    _keep, more = plan.take(float(Q1.max()))
    if more:
        q2 = Q2[d1]
        keep, _ = plan.take(float(q2.max()))
        if keep:
            drafts.append(int(rng.choice(4, p=q2)))
            probs.append(q2)
    rows = [P1, P2[d1], np.full(4, 0.25)][: len(drafts) + 1]
    logits = mx.log(mx.array(np.stack(rows), dtype=mx.float32))
    out = verify_sampled(logits, drafts, mx.array(np.stack(probs), dtype=mx.float32), sampler).tokens
    if len(out) == 1:
        out.append(int(rng.choice(4, p=P2[out[0]])))
    return out[0], out[1]


@pytest.mark.slow
def test_stopping_on_the_drafts_confidence_keeps_the_targets_distribution():
    sampler = Sampler(GenerationConfig(temperature=1.0, seed=5))
    rng = np.random.default_rng(1)
    counts = np.zeros(16, dtype=int)
    for _ in range(4000):
        a, b = _two_tokens(rng, sampler)
        counts[4 * a + b] += 1
    target = (P1[:, None] * P2).reshape(-1)
    # 15 degrees of freedom: the 99.9% quantile is 37.7
    assert chi_square(counts, target) < 37.7
    assert chi_square(counts, (Q1[:, None] * Q2).reshape(-1)) > 300  # the draft's own joint is far: it can fail


# --- the engine's drafters ---


@pytest.mark.parametrize("mode", ["draft", "lookup"])
def test_early_stopping_drafts_give_the_plain_output_and_say_where_they_stopped(
    mode, dense_target, dense_draft_partial
):
    engine = Engine.load(dense_target, dense_draft_partial)
    ids = prompt_ids(engine)
    plain = engine.generate(ids, GenerationConfig(mode="baseline", max_tokens=48))
    # plain decoding very slow, and a draft step about twice a verify pass, as the tiny models measure on an
    # idle machine: given as costs, not measured, so a busy machine's timings cannot move the early stops
    engine.auto_k[mode] = CostedAutoK(
        k_max=8, plain_s=10.0, plain_cost=10.0, draft_cost=0.0015, verify_base=0.0008, verify_per_k=0.0001
    )
    rounds: list[RoundResult] = []
    cfg = GenerationConfig(mode=mode, num_draft_tokens="auto", max_tokens=48)
    tokens = [t for event in engine.stream(ids, cfg) for t in _tokens(event, rounds)]
    assert tokens == plain.tokens
    drafting = [r for r in rounds if r.num_draft_tokens > 0]
    assert drafting, "no round drafted"
    for r in drafting[1:]:  # after the first round (it measures the costs) every round reads its confidences
        assert len(r.confidences) == r.drafted and all(0.0 <= c <= 1.0 for c in r.confidences)
        assert r.stop_confidence is None or r.stopped_early
    if mode == "draft":  # a random pair's draft is often unsure; lookup may find few matches to propose at all
        assert any(r.stopped_early for r in drafting), [(r.drafted, r.confidences) for r in drafting]


def _tokens(event, rounds: list[RoundResult]) -> list[int]:
    if isinstance(event, RoundResult):
        rounds.append(event)
        return []
    return list(getattr(event, "token_ids", ()))


def test_the_stats_count_early_stops_and_acceptance_by_confidence():
    from specchat.engine.stats import StatsRecorder

    recorder = StatsRecorder(GenerationConfig(mode="draft", num_draft_tokens="auto"), 10, 0)
    recorder.round_done(RoundResult(0, 3, 3, 2, 3, 0.1, 0.2, None, True, 0.35, (0.99, 0.97, 0.35)))
    recorder.round_done(RoundResult(1, 2, 2, 2, 3, 0.1, 0.2, None, True, 0.15, (0.95, 0.55)))
    recorder.round_done(RoundResult(2, 4, 4, 1, 2, 0.1, 0.2, None, False, None, (0.92, 0.3, 0.99, 0.99)))
    stats = recorder.finish(8, "length")
    assert stats.early_stops == 2 and stats.median_stop_confidence == pytest.approx(0.25)
    # verified up to the first miss: 0.99, 0.97 hit, 0.35 missed; 0.95, 0.55 hit; 0.92 hit, 0.3 missed
    assert stats.confidence_acceptance == ((0.3, 0, 2), (0.5, 1, 1), (0.9, 4, 4))
