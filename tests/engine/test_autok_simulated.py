"""Auto K against every fixed K on simulated replies with the real Qwen pair's costs (autok_sim.py):
the pair's recorded agreements, and random ones."""

import pytest

from .autok_sim import CODE, OPEN, compare, recorded, synthetic

# the goals: at least 0.97 of the best fixed K and 0.98 of plain decoding
REAL_REPLIES = {
    "code, 64 tokens": (CODE, ["code-0"], 64),
    "code, 256 tokens": (CODE, ["code-0"], 256),
    "open, 64 tokens": (OPEN, ["open-0"], 64),
    "open, 164 tokens": (OPEN, ["open-0"], None),
    "code conversation": (CODE, ["code-0", "code-1", "code-2"], 64),
    "open conversation": (OPEN, ["open-0", "open-1", "open-2"], 64),
    "code, then prose": (OPEN, ["code-0", "open-1", "code-2", "open-2"], 64),
}


@pytest.mark.parametrize("case", REAL_REPLIES)
def test_on_the_real_pairs_agreements_auto_reaches_the_best_fixed_k_and_beats_plain(case):
    pair, names, n = REAL_REPLIES[case]
    to_best, to_plain = compare(lambda seed: [recorded(name, n) for name in names], pair)
    assert to_best >= 0.97 and to_plain >= 0.98, (to_best, to_plain)


@pytest.mark.parametrize(
    "kind, pair, n", [("code", CODE, 64), ("code", CODE, 256), ("open", OPEN, 64), ("open", OPEN, 165)]
)
def test_auto_reaches_the_best_fixed_k_and_beats_plain(kind, pair, n):
    to_best, to_plain = compare(lambda seed: [synthetic(kind, n, seed)], pair)
    assert to_best >= 0.97 and to_plain >= 0.98, (to_best, to_plain)


def test_with_a_draft_that_rarely_agrees_auto_stays_near_plain_decoding():
    to_best, to_plain = compare(lambda seed: [synthetic("bad", 128, seed)], OPEN)
    assert to_plain >= 0.95 and to_best >= 1.1, (to_best, to_plain)  # every fixed K loses far more


def test_a_conversation_keeps_what_it_learned_and_probes_again_at_each_reply():
    to_best, to_plain = compare(lambda seed: [synthetic("open", 64, 100 * seed + i) for i in range(6)], OPEN, seeds=10)
    assert to_best >= 0.97 and to_plain >= 0.98, (to_best, to_plain)
