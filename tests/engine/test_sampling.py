"""Rejection sampling keeps the target's distribution; seeds make it reproducible."""

import math

import mlx.core as mx
import numpy as np
import pytest

from specchat.engine import Engine, GenerationConfig
from specchat.engine.sampling import Sampler
from specchat.engine.verify import verify_sampled

from .helpers import prompt_ids

P = np.array([0.40, 0.25, 0.15, 0.10, 0.05, 0.03, 0.02, 0.0])
Q = np.array([0.05, 0.05, 0.10, 0.10, 0.20, 0.20, 0.20, 0.10])


def chi_square(counts: np.ndarray, probs: np.ndarray) -> float:
    expected = probs * counts.sum()
    keep = expected > 0
    assert counts[~keep].sum() == 0, "sampled a token of probability zero"
    return float((((counts - expected) ** 2)[keep] / expected[keep]).sum())


def sample_first_tokens(trials: int, sampler: Sampler) -> np.ndarray:
    """Draft one token from Q, verify against P; count the first emitted token."""
    target_logits = mx.log(mx.array(np.stack([P, P]) + 1e-12, dtype=mx.float32))
    q = mx.array(Q[None], dtype=mx.float32)
    counts = np.zeros(len(P), dtype=int)
    rng = np.random.default_rng(0)
    for _ in range(trials):
        draft = int(rng.choice(len(Q), p=Q))
        verdict = verify_sampled(target_logits, [draft], q, sampler)
        counts[verdict.tokens[0]] += 1
    return counts


def test_verify_sampled_reproduces_the_target_distribution():
    sampler = Sampler(GenerationConfig(temperature=1.0, seed=3))
    counts = sample_first_tokens(3000, sampler)
    # 6 degrees of freedom (7 tokens with p > 0): the 99.9% quantile is 22.5.
    assert chi_square(counts, P) < 22.5
    # The same counts are far from the draft's distribution: the test can fail.
    assert chi_square(counts, Q) > 200


@pytest.mark.slow
def test_sampling_the_target_through_the_engine_matches_its_own_distribution(dense_target, dense_draft_unrelated):
    """E[log p(X)] equals -H(p) when X ~ p; drawing from the draft moves it by many standard errors."""
    engine = Engine.load(dense_target, dense_draft_unrelated)
    ids = prompt_ids(engine)
    target_logits = engine.target.model(mx.array(ids)[None])[0, -1]
    draft_logits = engine.draft.model(mx.array(ids)[None])[0, -1]
    p = np.array(mx.softmax(target_logits.astype(mx.float32)))
    q = np.array(mx.softmax(draft_logits.astype(mx.float32)))
    log_p = np.log(np.maximum(p, 1e-30))
    mean_p, var_p = (p * log_p).sum(), (p * log_p**2).sum() - (p * log_p).sum() ** 2
    mean_q = (q * log_p).sum()
    runs = 300
    tokens = [
        engine.generate(
            ids, GenerationConfig(mode="draft", num_draft_tokens=2, max_tokens=1, temperature=1.0, seed=s)
        ).tokens[0]
        for s in range(runs)
    ]
    observed = np.mean([log_p[t] for t in tokens])
    se = math.sqrt(var_p / runs)
    assert abs(observed - mean_p) < 4 * se
    assert abs(mean_q - mean_p) > 8 * se, "the fixture cannot tell p from q: test would be vacuous"


def test_same_seed_same_tokens_other_seed_other_tokens(hybrid_target, hybrid_draft_partial):
    engine = Engine.load(hybrid_target, hybrid_draft_partial)
    ids = prompt_ids(engine)

    def run(seed, mode="draft"):
        cfg = GenerationConfig(mode=mode, num_draft_tokens=3, max_tokens=24, temperature=1.0, seed=seed)
        return engine.generate(ids, cfg).tokens

    assert run(7) == run(7)
    assert run(7) != run(8)
    assert run(7, "baseline") == run(7, "baseline")


def test_top_k_one_is_greedy_at_any_temperature(dense_target, dense_draft_partial):
    engine = Engine.load(dense_target, dense_draft_partial)
    ids = prompt_ids(engine)
    greedy = engine.generate(ids, GenerationConfig(max_tokens=24)).tokens
    for mode in ("baseline", "draft"):
        cfg = GenerationConfig(mode=mode, max_tokens=24, temperature=1.5, top_k=1, seed=1)
        assert engine.generate(ids, cfg).tokens == greedy


@pytest.mark.parametrize(
    "kw",
    [
        pytest.param({"top_p": 0.5}, marks=pytest.mark.slow),
        pytest.param({"min_p": 0.3}, marks=pytest.mark.slow),
        {"top_k": 3},
    ],
)
def test_filters_shape_both_distributions_alike(kw):
    sampler = Sampler(GenerationConfig(temperature=1.0, **kw))
    logits = mx.log(mx.array(np.stack([P, Q]) + 1e-12, dtype=mx.float32))
    probs = np.array(sampler.probs(logits))
    assert np.allclose(probs.sum(axis=-1), 1.0, atol=1e-5)
    for row, base in zip(probs, (P, Q)):
        kept = row > 0
        assert kept.sum() < (base > 0).sum(), "the filter removed nothing"
        assert base[kept].min() >= base[~kept].max(), "a less likely token survived a likelier one"
