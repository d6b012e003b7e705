"""Our Sampler's probabilities equal the distribution mlx-lm's make_sampler draws from, filters included."""

import functools
import math

import mlx.core as mx
import numpy as np
import pytest
from mlx_lm.sample_utils import make_sampler

from specchat.engine import GenerationConfig
from specchat.engine.sampling import Sampler

VOCAB = 256
DRAWS = 20_000
POSITIONS = 3  # independent logit vectors per setting
SETTINGS = {
    "temperature only": dict(temperature=0.7),
    "top-p": dict(temperature=0.7, top_p=0.8),
    "min-p": dict(temperature=1.5, min_p=0.1),
    "top-k": dict(temperature=0.7, top_k=20),
    "all together": dict(temperature=1.3, top_p=0.9, min_p=0.05, top_k=30),
}
FAST = ("top-k", "min-p")  # settings the fast subset (-m "not slow") keeps; the rest draw the same way


def settings(names) -> list:
    """The setting names as parameters, those outside FAST marked slow."""
    return [pytest.param(name, marks=() if name in FAST else pytest.mark.slow) for name in names]


def realistic_logits(seed: int) -> np.ndarray:
    """A Zipf-shaped next-token distribution (a few likely tokens, a long tail), noisy and shuffled."""
    rng = np.random.default_rng(seed)
    logits = -1.2 * np.log(np.arange(1, VOCAB + 1)) + rng.normal(0, 0.3, VOCAB)
    rng.shuffle(logits)
    return logits.astype(np.float32)


def mlx_lm_counts(logits: np.ndarray, cfg: GenerationConfig, seed: int) -> np.ndarray:
    """Token counts of DRAWS samples from mlx-lm's own sampler, fed log-probabilities as generate_step does."""
    return _mlx_lm_counts(logits.tobytes(), cfg.temperature, cfg.top_p, cfg.min_p, cfg.top_k, seed).copy()


@functools.cache
def _mlx_lm_counts(logits: bytes, temperature: float, top_p: float, min_p: float, top_k: int, seed: int) -> np.ndarray:
    """mlx_lm_counts, drawn once per (logits, filters, seed): the two tests below compare the same draws."""
    sampler = make_sampler(temp=temperature, top_p=top_p, min_p=min_p, top_k=top_k)
    x = mx.array(np.frombuffer(logits, dtype=np.float32))[None]
    logprobs = mx.broadcast_to(x - mx.logsumexp(x, axis=-1, keepdims=True), (DRAWS, VOCAB))
    mx.random.seed(seed)
    tokens = np.array(sampler(logprobs))
    return np.bincount(tokens, minlength=VOCAB)


def temperature_first_probs(logits: np.ndarray, cfg: GenerationConfig) -> np.ndarray:
    """The order this app used before: temperature, then top-k, top-p, min-p (what the test must reject)."""
    from mlx_lm.sample_utils import apply_min_p, apply_top_k, apply_top_p

    x = mx.array(logits)[None] / cfg.temperature
    x = x - mx.logsumexp(x, axis=-1, keepdims=True)
    if cfg.top_k:
        x = apply_top_k(x, cfg.top_k)
    if cfg.top_p < 1:
        x = apply_top_p(x, cfg.top_p)
    if cfg.min_p:
        x = apply_min_p(x, cfg.min_p)
    return np.array(mx.softmax(x, axis=-1))[0]


def chi_square_excess(counts: np.ndarray, probs: np.ndarray) -> float:
    """Chi-square over bins pooled to an expected count >= 5, divided by its 99.9% quantile (> 1: reject).

    A token drawn where probs is 0 is an outright mismatch (returns inf).
    """
    n = counts.sum()
    expected = probs * n
    if counts[expected == 0].sum():
        return math.inf
    big = expected >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    keep = exp > 0
    stat = float((((obs - exp) ** 2)[keep] / exp[keep]).sum())
    df = int(keep.sum()) - 1
    z = 3.09  # 99.9% one-sided normal quantile; Wilson-Hilferty approximation of the chi-square quantile
    quantile = df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3
    return stat / quantile


@pytest.mark.parametrize("name", settings(SETTINGS))
def test_our_probabilities_match_mlx_lm_make_sampler(name):
    cfg = GenerationConfig(seed=0, **SETTINGS[name])
    rows = np.stack([realistic_logits(seed) for seed in range(POSITIONS)])
    ours = np.array(Sampler(cfg).probs(mx.array(rows)))  # every position in one batch, as verification does
    assert np.allclose(ours.sum(axis=-1), 1.0, atol=1e-5)
    for position, logits in enumerate(rows):
        counts = mlx_lm_counts(logits, cfg, seed=100 + position)
        assert chi_square_excess(counts, ours[position]) < 1, f"position {position} differs from mlx-lm"
        if name != "temperature only":
            assert (ours[position] == 0).sum() > 0, "the filter removed nothing: the case tests nothing"


@pytest.mark.parametrize("name", settings(["top-p", "min-p", "all together"]))
def test_the_old_temperature_first_order_is_told_apart(name):
    """The same draws reject the order this app used before (temperature applied before the filters)."""
    cfg = GenerationConfig(seed=0, **SETTINGS[name])
    for position in range(POSITIONS):
        logits = realistic_logits(position)
        counts = mlx_lm_counts(logits, cfg, seed=100 + position)
        assert chi_square_excess(counts, temperature_first_probs(logits, cfg)) > 1


def test_min_p_one_keeps_only_the_likeliest_token():
    logits = mx.array(np.stack([realistic_logits(seed) for seed in range(POSITIONS)]))
    sampler = Sampler(GenerationConfig(temperature=1.0, min_p=1.0, seed=0))
    probs = np.array(sampler.probs(logits))
    assert np.array_equal(probs.argmax(axis=-1), np.array(mx.argmax(logits, axis=-1)))
    assert np.allclose(probs.max(axis=-1), 1.0)
    tokens, _ = sampler.pick(logits)
    assert tokens.tolist() == mx.argmax(logits, axis=-1).tolist()


def test_greedy_is_argmax_and_returns_no_probabilities():
    logits = mx.array(np.stack([realistic_logits(seed) for seed in range(POSITIONS)]))
    tokens, probs = Sampler(GenerationConfig(top_p=0.5, min_p=0.2, top_k=3)).pick(logits)
    assert probs is None and tokens.tolist() == mx.argmax(logits, axis=-1).tolist()


@pytest.mark.slow
def test_rejection_sampling_with_every_filter_emits_the_filtered_target_distribution():
    """Draft from another distribution through the same Sampler; the first emitted token follows ours (= mlx-lm's)."""
    from specchat.engine.verify import verify_sampled

    cfg = GenerationConfig(seed=5, **SETTINGS["all together"])
    sampler = Sampler(cfg)
    target = mx.array(np.stack([realistic_logits(0)] * 2))
    draft_probs = sampler.probs(mx.array(realistic_logits(1))[None])
    p = np.array(sampler.probs(target))[0]
    q = np.array(draft_probs)[0]
    rng = np.random.default_rng(0)
    counts = np.zeros(VOCAB, dtype=int)
    for _ in range(4000):
        draft = int(rng.choice(VOCAB, p=q / q.sum()))
        counts[verify_sampled(target, [draft], draft_probs, sampler).tokens[0]] += 1
    assert chi_square_excess(counts, p) < 1
    assert chi_square_excess(counts, q) > 1, "the draft's distribution is as close: the test could not fail"
