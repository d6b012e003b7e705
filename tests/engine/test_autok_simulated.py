"""Auto K against every fixed K on simulated replies with the real Qwen pair's costs (autok_sim.py):
the pair's recorded agreements, and random ones."""

import pytest

from specchat.engine.policy import DEFAULT_POLICY

from .autok_sim import CODE, OPEN, OPEN_PLAIN_WINS, Reply, compare, plain_tokens, recorded, synthetic

PROBE_BURST = DEFAULT_POLICY.probe_burst

# (pair costs, replies, tokens per reply, the least auto must reach against the best fixed K = 1..4). Drafts
# that stop where the draft is unsure, up to 16 tokens, beat every fixed K by 8-25% on code (long confident
# runs between unsure spots) and on a code-then-prose conversation. On 32 and 64 tokens of the story the best
# stop threshold chosen in hindsight gains 0-2% over the best fixed K on this CPU's costs (a draft step costs a
# third of a verify pass) and 1-4% on a Mac's (verify nearly flat in K): the 0.5B coder's confidence on prose
# does not separate its hits from its misses sharply enough, so there auto must match the best fixed K.
REAL_REPLIES = {
    "code, 32 tokens": (CODE, ["code-0"], 32, 1.05),
    "code, 64 tokens": (CODE, ["code-0"], 64, 1.05),
    "code, 256 tokens": (CODE, ["code-0"], 256, 1.05),
    "open, 32 tokens": (OPEN, ["open-0"], 32, 0.97),
    "open, 64 tokens": (OPEN, ["open-0"], 64, 0.99),
    "open, 164 tokens": (OPEN, ["open-0"], None, 1.0),
    "code conversation": (CODE, ["code-0", "code-1", "code-2"], 64, 1.05),
    "open conversation": (OPEN, ["open-0", "open-1", "open-2"], 64, 1.02),
    "code, then prose": (OPEN, ["code-0", "open-1", "code-2", "open-2"], 64, 1.1),
    # the run where plain decoding costs 0.82 of a one-token verify pass: code as far ahead, the story behind
    "code, 32 tokens, cheap plain": (OPEN_PLAIN_WINS, ["code-0"], 32, 1.05),
    "code, 64 tokens, cheap plain": (OPEN_PLAIN_WINS, ["code-0"], 64, 1.05),
    "code, 256 tokens, cheap plain": (OPEN_PLAIN_WINS, ["code-0"], 256, 1.05),
    "open, 32 tokens, cheap plain": (OPEN_PLAIN_WINS, ["open-0"], 32, 0.97),
    "open, 64 tokens, cheap plain": (OPEN_PLAIN_WINS, ["open-0"], 64, 1.0),
    "open conversation, cheap plain": (OPEN_PLAIN_WINS, ["open-0", "open-1", "open-2"], 64, 1.02),
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


def test_where_plain_decoding_beats_every_k_auto_measures_it_and_keeps_up_with_it():
    """The story on a run where plain decoding, pipelined, cost 0.82 of a one-token verify pass: every fixed K
    5-6% behind plain. Auto's estimate (the verify pass) puts speculation ahead, so it probes plain decoding
    once the first rounds are in, finds it faster and decodes plainly to the end (it read 0.95x plain before
    the probe; 0.965x with the probe while it went back to speculating after it, as on the real pair)."""
    to_best, to_plain = compare(lambda seed: [Reply.real("open-0", 64)], OPEN_PLAIN_WINS)
    assert to_plain / to_best <= 0.95  # the best fixed K over plain: the case is one plain decoding wins
    assert to_plain >= 0.98, (to_best, to_plain)
    plain, _ = plain_tokens(lambda seed: [Reply.real("open-0", 64)], OPEN_PLAIN_WINS)
    assert plain >= 24  # from the probe (about token 32) on, plainly


@pytest.mark.parametrize("case", [case for case in REAL_REPLIES if case.startswith("code")])
def test_where_speculation_is_far_ahead_no_token_goes_to_plain_decoding(case):
    pair, names, n, _ = REAL_REPLIES[case]
    plain, probes = plain_tokens(lambda seed: [Reply.real(name, n) for name in names], pair)
    assert plain == 0 and probes == 0


def test_on_a_story_one_short_probe_measures_plain_decoding():
    _, probes = plain_tokens(lambda seed: [Reply.real("open-0", 64)], OPEN)
    assert probes <= PROBE_BURST  # one probe per reply at most, never again while the costs hold
