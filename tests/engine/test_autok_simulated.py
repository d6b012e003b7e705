"""Auto K against every fixed K on simulated replies with the real Qwen pair's costs (autok_sim.py):
the pair's recorded agreements, and random ones."""

import pytest

from .autok_sim import CODE, OPEN, Reply, compare, recorded, synthetic

# (pair costs, replies, tokens per reply, the least auto must reach against the best fixed K = 1..4). Drafts
# that stop where the draft is unsure beat every fixed K by 10-13% where long confident runs meet unsure spots
# (code, a code-then-prose conversation); on the story the best stop threshold chosen in hindsight gains
# only 3-4% over the best fixed K on this CPU (a draft step costs a third of a verify pass), so there auto
# must match it.
REAL_REPLIES = {
    "code, 32 tokens": (CODE, ["code-0"], 32, 1.05),
    "code, 64 tokens": (CODE, ["code-0"], 64, 1.0),
    "code, 256 tokens": (CODE, ["code-0"], 256, 1.05),
    "open, 32 tokens": (OPEN, ["open-0"], 32, 0.97),
    "open, 64 tokens": (OPEN, ["open-0"], 64, 0.99),
    "open, 164 tokens": (OPEN, ["open-0"], None, 1.0),
    "code conversation": (CODE, ["code-0", "code-1", "code-2"], 64, 1.02),
    "open conversation": (OPEN, ["open-0", "open-1", "open-2"], 64, 1.02),
    "code, then prose": (OPEN, ["code-0", "open-1", "code-2", "open-2"], 64, 1.05),
}


@pytest.mark.parametrize("case", REAL_REPLIES)
def test_on_the_real_pairs_recorded_replies_auto_beats_the_best_fixed_k_and_plain(case):
    pair, names, n, least = REAL_REPLIES[case]
    to_best, to_plain = compare(lambda seed: [Reply.real(name, n) for name in names], pair)
    assert to_best >= least and to_plain >= 0.98, (to_best, to_plain)


@pytest.mark.parametrize("case", ["code, 256 tokens", "code, then prose"])
def test_without_the_drafts_confidence_auto_only_matches_the_best_fixed_k(case):
    """The same replies without confidences (an i.i.d. acceptance): the early stop is what wins."""
    pair, names, n, least = REAL_REPLIES[case]
    dynamic, _ = compare(lambda seed: [Reply.real(name, n) for name in names], pair)
    iid, _ = compare(lambda seed: [recorded(name, n) for name in names], pair)
    assert iid >= 0.97 and dynamic >= iid + 0.04, (dynamic, iid)


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
