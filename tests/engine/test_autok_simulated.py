"""Auto K against every fixed K on a simulated pair with the real Qwen pair's costs (autok_sim.py)."""

import statistics

import pytest

from app.engine.autok import AutoK

from .autok_sim import CODE, OPEN, best_fixed, compare, run


@pytest.mark.parametrize("kind, pair, n", [("code", CODE, 64), ("code", CODE, 256), ("open", OPEN, 64),
                                           ("open", OPEN, 165)])
def test_auto_reaches_the_best_fixed_k_and_beats_plain(kind, pair, n):
    to_best, to_plain = compare(kind, pair, n)
    assert to_best >= 0.97 and to_plain >= 0.98, (to_best, to_plain)


def test_with_a_draft_that_rarely_agrees_auto_stays_near_plain_decoding():
    to_best, to_plain = compare("bad", OPEN, 128)
    assert to_plain >= 0.95 and to_best >= 1.1, (to_best, to_plain)  # every fixed K loses far more


def test_a_conversation_keeps_what_it_learned_and_probes_again_at_each_reply():
    controller = AutoK(k_max=8)
    run("open", OPEN, 64, seed=1, auto=controller)  # the first reply: what it learns carries over
    seeds = range(2, 12)
    auto = statistics.fmean(run("open", OPEN, 64, seed=s, auto=controller) for s in seeds)
    best = best_fixed("open", OPEN, 64, seeds)
    assert auto / best >= 0.97 and auto * OPEN.plain >= 0.98, (auto / best, auto * OPEN.plain)
