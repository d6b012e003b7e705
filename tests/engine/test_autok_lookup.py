"""Auto-K picks K from acceptance and costs; prompt lookup proposes earlier continuations."""

import random

import mlx.core as mx
import pytest

from app.engine.autok import AutoK, expected_tokens
from app.engine.config import GenerationConfig
from app.engine.lookup import PromptLookupDrafter, find_continuation
from app.engine.sampling import Sampler


def feed(controller: AutoK, acceptance: float, rounds: int = 60, draft_step=0.002, verify=None):
    """Drive the controller with synthetic rounds: each draft accepted i.i.d. with `acceptance`."""
    verify = verify or (lambda k: 0.010 + 0.001 * k)
    rng = random.Random(0)
    for _ in range(rounds):
        k = controller.choose()
        accepted = 0
        while accepted < k and rng.random() < acceptance:
            accepted += 1
        controller.observe(k, accepted, draft_step * k, verify(k))
    return controller.choose()


def test_expected_tokens_formula():
    assert expected_tokens(0.0, 4) == 1.0
    assert expected_tokens(1.0, 4) == 5.0
    assert expected_tokens(0.5, 2) == pytest.approx(1 + 0.5 + 0.25)


def test_near_zero_acceptance_turns_speculation_off():
    assert feed(AutoK(), acceptance=0.0) == 0


def test_near_full_acceptance_drafts_long():
    assert feed(AutoK(k_max=8), acceptance=1.0) >= 6


def test_costly_drafts_shorten_k():
    cheap = feed(AutoK(), acceptance=0.8, draft_step=0.0005)
    costly = feed(AutoK(), acceptance=0.8, draft_step=0.006)
    assert costly < cheap


def test_probes_come_back_when_text_turns_predictable():
    controller = AutoK(probe_every=4)
    assert feed(controller, acceptance=0.0) == 0
    assert feed(controller, acceptance=1.0, rounds=80) >= 4


def test_lookup_finds_the_latest_longest_match():
    seq = [1, 2, 3, 4, 9, 1, 2, 3, 5, 7, 2, 3]
    assert find_continuation(seq, 2) == [5, 7]  # tail [2, 3] last seen before "5 7"
    assert find_continuation([1, 2, 3, 1, 2], 3) == [3, 1, 2]
    assert find_continuation([4, 5, 6], 3) == []


def test_lookup_draft_is_one_hot_when_sampling():
    drafter = PromptLookupDrafter(vocab_size=10)
    draft = drafter.propose([1, 2, 3, 1, 2], 2, Sampler(GenerationConfig(temperature=1.0, seed=0)))
    assert draft.tokens.tolist() == [3, 1]
    assert mx.array_equal(draft.probs.sum(axis=-1), mx.ones(2)).item()
    assert draft.probs[0, 3].item() == 1.0 and draft.probs[1, 1].item() == 1.0
