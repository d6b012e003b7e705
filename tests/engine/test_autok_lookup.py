"""Auto-K picks K from acceptance and costs; prompt lookup proposes earlier continuations."""

import random

import mlx.core as mx
import pytest

from specchat.engine.autok import AutoK
from specchat.engine.config import AUTO_MAX_DRAFT_TOKENS, GenerationConfig
from specchat.engine.drafters import DraftRequest
from specchat.engine.lookup import PromptLookupDrafter, find_continuation
from specchat.engine.pass_costs import expected_tokens
from specchat.engine.sampling import Sampler

from .costed_autok import CostedAutoK


def feed(controller: AutoK, acceptance: float, rounds: int = 60, draft_step=0.002, verify=None):
    """Drive the controller with synthetic rounds: each draft accepted i.i.d. with `acceptance`."""
    verify = verify or (lambda k: 0.010 + 0.001 * k)
    rng = random.Random(0)
    for _ in range(rounds):
        k = controller.choose()
        if k == 0:
            tokens = controller.burst_length()
            controller.observe_plain(tokens, tokens * verify(0))
            continue
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
    controller = AutoK()
    feed(controller, acceptance=0.0, rounds=70)
    assert controller.plain_s is not None and controller.rate(1) < 0.9 * controller.rate(0)
    assert controller.probe_gap == 128  # only rare probes left


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
    draft = drafter.propose(DraftRequest([1, 2, 3, 1, 2], 2, Sampler(GenerationConfig(temperature=1.0, seed=0))))
    assert draft.tokens.tolist() == [3, 1]
    assert mx.array_equal(draft.probs.sum(axis=-1), mx.ones(2)).item()
    assert draft.probs[0, 3].item() == 1.0 and draft.probs[1, 1].item() == 1.0


REPEATING = "one two three four. one two three four. one two three four. one two"


@pytest.mark.parametrize(
    "mode,k", [pytest.param("lookup", 3, marks=pytest.mark.slow), ("lookup", "auto"), ("draft", "auto")]
)
def test_lookup_and_auto_k_are_identical_to_plain_decoding(hybrid_target, hybrid_draft_partial, mode, k):
    from specchat.engine import Engine, GenerationConfig, RoundResult

    engine = Engine.load(hybrid_target, hybrid_draft_partial)
    ids = list(engine.tokenizer.encode(REPEATING))
    baseline = engine.generate(ids, GenerationConfig(max_tokens=48))
    events = list(engine.stream(ids, GenerationConfig(mode=mode, num_draft_tokens=k, max_tokens=48)))
    assert list(events[-1].tokens) == baseline.tokens
    rounds = [e for e in events if isinstance(e, RoundResult)]
    assert all(r.drafted <= r.num_draft_tokens for r in rounds)
    if k == "auto":
        assert events[-1].stats.auto_k and {r.num_draft_tokens for r in rounds} <= set(range(AUTO_MAX_DRAFT_TOKENS + 1))
        drafting = [r.num_draft_tokens for r in rounds if r.num_draft_tokens]
        assert events[-1].stats.mean_k == pytest.approx(sum(drafting) / len(drafting) if drafting else 0.0)
        stats = events[-1].stats
        assert stats.plain_tokens == sum(r.emitted for r in rounds if r.num_draft_tokens == 0)
        assert stats.plain_tokens + stats.speculative_tokens == stats.generated_tokens == 48


def test_lookup_accepts_repeated_text_and_samples_correctly(dense_target):
    from specchat.engine import Engine, GenerationConfig

    engine = Engine.load(dense_target)
    ids = list(engine.tokenizer.encode(REPEATING))
    greedy = engine.generate(ids, GenerationConfig(max_tokens=40))
    history = ids + greedy.tokens  # the reply repeats itself: the next run can copy from it
    result = engine.generate(
        history + greedy.tokens[:5], GenerationConfig(mode="lookup", num_draft_tokens=4, max_tokens=30)
    )
    assert result.stats.accepted > 0
    cfg = GenerationConfig(mode="lookup", num_draft_tokens=3, max_tokens=20, temperature=1.0, seed=5)
    assert engine.generate(ids, cfg).tokens == engine.generate(ids, cfg).tokens


def test_mtp_depth_is_limited_and_auto_is_accepted():
    from specchat.engine import ConfigError

    with pytest.raises(ConfigError, match=r"MTP depth \(K\) must be a whole number between 1 and 4 or 'auto', got 6"):
        GenerationConfig(mode="mtp", num_draft_tokens=6)
    assert GenerationConfig(mode="mtp", num_draft_tokens="auto").max_draft_tokens == 4
    with pytest.raises(ConfigError, match="or 'auto'"):
        GenerationConfig(num_draft_tokens="fast")


def test_auto_k_falls_back_to_plain_bursts_with_an_unrelated_draft(dense_target, dense_draft_unrelated):
    from specchat.engine import Engine, GenerationConfig, RoundResult

    engine = Engine.load(dense_target, dense_draft_unrelated)
    ids = list(engine.tokenizer.encode(REPEATING))
    baseline = engine.generate(ids, GenerationConfig(max_tokens=64)).tokens
    cfg = GenerationConfig(mode="draft", num_draft_tokens="auto", max_tokens=64)
    # the real pair's costs, not this machine's timings: a busy machine made plain decoding look dear
    controller = engine.auto_k[cfg.mode] = CostedAutoK(k_max=cfg.max_draft_tokens)  # the engine's own slot
    for _ in range(2):  # the second run starts from what the first one learned
        events = list(engine.stream(ids, cfg))
        assert list(events[-1].tokens) == baseline
    rounds = [e for e in events if isinstance(e, RoundResult)]
    plain = [r for r in rounds if r.num_draft_tokens == 0]
    assert plain and all(r.drafted == 0 and r.emitted >= 1 for r in plain)
    assert sum(r.emitted for r in plain) > sum(r.emitted for r in rounds) / 2
    assert sum(r.emitted for r in rounds) == len(baseline)
    assert "round" in controller.measured and "plain" in controller.measured  # the engine ran this controller
    assert controller.rate(0) > controller.rate(1)  # acceptance near 0: plain is ahead of every K


def test_a_new_controller_speculates_first_and_spends_no_plain_burst_when_drafts_clearly_pay():
    controller = AutoK(k_max=8)
    assert controller.choose() == 2  # one speculative round measures drafting and verifying
    controller.observe(2, 2, 0.004, 0.012, catch_up=1)
    k = controller.choose()
    assert k >= 3  # 3 tokens for 0.016 s vs at most 1 per 0.012 s plain: no burst, longer drafts
    controller.observe(k, k, 0.002 * k, 0.008 + 0.002 * k, catch_up=2)
    assert controller.verify_cost(0) == pytest.approx(0.008)  # the line through K=2 and K
    assert controller.choose() >= 2 and controller.plain_s is None  # still speculating, never measured plain


def test_plain_decoding_is_measured_when_it_could_win():
    controller = AutoK(k_max=8)
    controller.observe(2, 0, 0.012, 0.012, catch_up=1)  # nothing accepted, a draft step half a verify
    assert controller.rate(1) < 1.05 * controller.rate(0)
    assert controller.choose() == 0 and controller.burst_length() == 4  # a short burst measures it
    controller.observe_plain(4, 4 * 0.011)
    assert controller.plain_s == pytest.approx(0.011) and controller.burst_length() == controller.probe_every


def test_failed_probes_come_further_apart():
    controller = AutoK(k_max=8, probe_every=16)
    controller.observe(2, 0, 0.008, 0.012, catch_up=1)
    controller.observe_plain(4, 4 * 0.010)
    gaps, plain = [], 0
    while len(gaps) < 5:
        k = controller.choose()
        if k == 0:
            n = controller.burst_length()
            controller.observe_plain(n, n * 0.010)
            plain += n
        else:
            gaps.append(plain)
            plain = 0
            controller.observe(1, 0, 0.004, 0.011, catch_up=plain + 2)
    assert gaps == [16, 32, 64, 128, 128]


def test_catching_up_after_a_plain_burst_is_not_billed_as_drafting():
    controller = AutoK(k_max=8)
    controller.observe(2, 2, 0.004, 0.012, catch_up=1)
    controller.observe_plain(16, 16 * 0.011)
    controller.observe(1, 1, 0.050, 0.011, catch_up=17)  # 16 burst tokens taken in before the draft step
    assert controller.draft_step_s == pytest.approx(0.002)
    controller.observe(2, 2, 0.0044, 0.012, catch_up=2)  # a normal round after a full accept counts
    assert controller.draft_step_s == pytest.approx(0.9 * 0.002 + 0.1 * 0.0022)


def test_a_k_measured_once_leans_on_the_line_through_the_others():
    controller = AutoK(draft_step_s=0.16, verify_s={1: 0.635, 2: 0.572, 3: 0.60}, verify_rounds={1: 1, 2: 40, 3: 12})
    assert controller.verify_cost(1) < 0.60  # one slow K=1 round does not condemn K=1 for good
    assert controller.verify_cost(2) == pytest.approx(0.572, abs=0.01)  # forty rounds stand on their own


def test_near_ties_run_the_least_measured_k():
    controller = AutoK(
        k_max=2, draft_step_s=0.0, verify_s={1: 0.010, 2: 0.015}, verify_rounds={1: 30, 2: 3}, plain_s=0.02
    )
    controller.accepted, controller.rejected = 1.0, 1.0  # alpha 0.5: 1.5 tokens / 10 ms vs 1.75 / 15 ms
    assert controller.rate(2) < controller.rate(1) * 0.99 and controller.choose() == 1
    controller.verify_s[2] = 0.0117  # now a little slower than K=1, within 1%: K=2, measured less, runs
    assert 0.99 * controller.rate(1) <= controller.rate(2) < controller.rate(1) and controller.choose() == 2


def test_a_round_with_nothing_to_propose_counts_as_a_miss():
    controller = AutoK(k_max=8)
    controller.observe(2, 2, 0.0001, 0.012, catch_up=1)
    before = controller.alpha
    for _ in range(20):  # prompt lookup found no earlier match: the round verified one token, drafted none
        controller.observe(0, 0, 0.0001, 0.011)
    assert controller.alpha < before / 4
    assert controller.verify_s == {2: 0.012}  # a round without drafts says nothing about a K's cost


def test_a_new_reply_keeps_alpha_but_must_earn_long_drafts_again():
    controller = AutoK(k_max=8)
    controller.observe(2, 2, 0.002, 0.012, catch_up=1)
    for _ in range(10):  # a reply of code: every draft accepted, drafts grow two at a time
        k = controller.choose()
        controller.observe(k, k, 0.002 * k, 0.012 + 0.001 * k)
    assert controller.choose() == 8 and controller.alpha > 0.9
    alpha = controller.alpha
    controller.new_reply()  # prose now?
    assert controller.alpha == pytest.approx(alpha) and controller.accepted + controller.rejected == pytest.approx(6)
    assert controller.choose() == 2
    controller.observe(2, 0, 0.004, 0.014)  # the first round says no: alpha falls fast, not over many rounds
    assert controller.alpha < alpha - 0.1  # with the whole reply behind it: 0.96


def test_a_round_that_caught_up_on_many_tokens_does_not_measure_a_draft_step():
    """After rounds another source drafted, the model drafter first reads what it missed: that round's drafting
    time is mostly reading, and a fresh controller that took it as a draft step's cost would think drafting dear."""
    controller = AutoK(k_max=8)
    controller.observe(1, 1, 0.70, 0.53, catch_up=60)
    assert controller.draft_step_s is None and controller.choose() == controller.policy.start_k
    controller.observe(2, 2, 0.38, 0.55, catch_up=1)
    assert controller.draft_step_s == pytest.approx(0.19)
