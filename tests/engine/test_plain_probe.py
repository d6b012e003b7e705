"""Auto K measures plain decoding with a short probe where speculation is not far ahead of it (plain_probe.py),
fed synthetic rounds: no model, no clock."""

import pytest

from specchat.engine.autok import AutoK
from specchat.engine.plain_probe import BurstClock
from specchat.engine.policy import DEFAULT_POLICY

PLAIN_MARGIN, RESUME_MARGIN = DEFAULT_POLICY.plain_margin, DEFAULT_POLICY.resume_margin
MAX_PROBE_SHARE, PROBE_AFTER = DEFAULT_POLICY.max_probe_share, DEFAULT_POLICY.probe_after
PROBE_BURST, PROBE_MARGIN = DEFAULT_POLICY.probe_burst, DEFAULT_POLICY.probe_margin

STORY = [True, True, False, True, True, True, False, True, False, True]  # the draft right 7 times in 10
CODE = [True]


def drive(
    auto: AutoK,
    rounds: int,
    scale: float = 1.0,
    plain: float = 0.40,
    match: list[bool] = STORY,
    budget: int | None = None,
) -> tuple[list[int], list[int]]:
    """Rounds at the real pair's story costs times scale (a draft step 0.175 s, a verify pass 0.49 + 0.045 K s),
    the draft right where the repeating match says; plain bursts at `plain` s a token. With a budget, the reply
    ends there (the controller is told what is left). Returns each round's K (0: a plain burst) and the plain
    bursts' lengths."""
    ks, bursts, pos = [], [], 0
    for _ in range(rounds):
        if budget is not None:
            if pos >= budget:
                break
            auto.left = budget - pos
        k = auto.choose()
        ks.append(k)
        if k == 0:
            bursts.append(auto.burst_length() if budget is None else min(auto.burst_length(), budget - pos))
            auto.observe_plain(bursts[-1], bursts[-1] * plain * scale)
            pos += bursts[-1]
            continue
        accepted = 0
        while accepted < k and match[(pos + accepted) % len(match)]:
            accepted += 1
        auto.observe(k, accepted, 0.175 * k * scale, (0.49 + 0.045 * k) * scale, catch_up=1)
        pos += accepted + 1
    return ks, bursts


def controller() -> AutoK:
    return AutoK(k_max=8)


def margin(auto: AutoK) -> float:
    """Speculation's predicted speedup over plain decoding's estimate (the one-token verify pass)."""
    return max(auto.rate(k) for k in range(1, auto.reach + 1)) / auto.rate(0)


def test_a_small_margin_is_probed_after_the_first_rounds_with_a_short_burst():
    auto = controller()
    ks, _ = drive(auto, PROBE_AFTER)
    assert 0 not in ks and auto.plain_s is None  # no probe before the first rounds gave a rate
    assert PLAIN_MARGIN < margin(auto) < PROBE_MARGIN  # not clearly ahead: worth a probe
    assert auto.choose() == 0 and auto.burst_length() == PROBE_BURST
    auto.observe_plain(PROBE_BURST, PROBE_BURST * 0.40)  # pipelined plain: 0.82 of a one-token verify pass
    assert auto.verify_cost(0) == pytest.approx(0.40)  # from now on the measured cost, not the line's 0.49
    assert auto.choose() == 0 and auto.burst_length() == auto.probe_every  # plain wins: decode plainly


def test_a_large_margin_spends_no_probe():
    auto = controller()
    ks, _ = drive(auto, 200, match=CODE)  # every draft accepted
    assert 0 not in ks and auto.plain_s is None and auto.probe.spent == 0


def test_plain_measured_slower_than_speculation_is_not_probed_again_while_the_costs_hold():
    auto = controller()
    ks, bursts = drive(auto, 200, plain=0.46)  # the probe finds plain at 0.94 of the verify pass: speculation ahead
    assert bursts == [PROBE_BURST] and ks.index(0) == PROBE_AFTER


def test_when_the_machine_slows_down_the_plain_cost_moves_with_the_verify_passes_and_is_probed_once():
    auto = controller()
    _, bursts = drive(auto, 60, plain=0.46)
    assert bursts == [PROBE_BURST]
    ks, bursts = drive(auto, 300, scale=1.25, plain=0.46)  # every cost 25% higher
    assert bursts == [PROBE_BURST]  # one probe again, no plain decoding: speculation stays ahead
    assert auto.verify_cost(0) == pytest.approx(0.46 * 1.25, rel=0.05)  # the plain cost followed the machine
    assert auto.probe.spent <= MAX_PROBE_SHARE * auto.probe.tokens


def test_once_plain_wins_a_short_reply_decodes_plainly_to_its_end():
    """A speculative probe from plain decoding costs a round at a K that lost; near the end of a reply there
    are too few tokens left to win it back, so the rest of the reply is one plain burst."""
    auto = controller()
    ks, bursts = drive(auto, 100, budget=40)
    first = ks.index(0)
    assert first == PROBE_AFTER and set(ks[first:]) == {0}  # never back to speculation
    assert bursts[0] == PROBE_BURST and len(bursts) <= 3


def test_a_long_reply_still_probes_speculation_from_plain_decoding():
    auto = controller()
    ks, _ = drive(auto, 100, budget=400)
    assert 1 in ks[ks.index(0) :]  # tokens enough left: speculation is tried again after probe_every


def test_from_plain_decoding_speculation_resumes_only_when_clearly_ahead():
    """A short probe reads plain decoding a little dear (its first step is not pipelined): speculation just
    ahead of that reading (by less than RESUME_MARGIN) does not send the controller back."""
    auto = controller()
    drive(auto, PROBE_AFTER)
    assert auto.choose() == 0
    auto.observe_plain(PROBE_BURST, PROBE_BURST * 0.43)  # plain measured at 0.88 of the verify pass
    assert 1 < margin(auto) < RESUME_MARGIN
    assert auto.choose() == 0


def test_a_probe_from_plain_decoding_that_beats_it_brings_the_next_one_back_soon():
    auto = controller()
    drive(auto, PROBE_AFTER)
    auto.choose()
    auto.observe_plain(PROBE_BURST, PROBE_BURST * 0.40)
    auto.probe_gap = 64  # after failed probes
    auto.observe(1, 1, 0.175, 0.535)  # two tokens in 0.71 s: faster than plain's 0.80 s
    assert auto.probe_gap == auto.probe_every


def test_a_plain_burst_weighs_as_many_measurements_as_it_has_tokens():
    auto = AutoK(plain_s=0.5)
    auto.observe_plain(16, 16 * 0.4)
    assert auto.plain_s == pytest.approx(0.5 * 0.9**16 + 0.4 * (1 - 0.9**16))


def clocked(times: list[float]) -> BurstClock:
    """A clock that saw one-token steps come out at these times."""
    ticks = iter(times)
    clock = BurstClock(now=lambda: next(ticks))
    for _ in times:
        clock.step(1)
    return clock


def test_a_plain_burst_is_timed_at_the_pace_of_its_steps_between_the_first_and_the_last():
    """A GPU: the first step has nothing to overlap with (0.60 s), then 0.40 s a step, the last one too. A 4-token
    probe timed whole would read 0.45 s a token; the controller is given 0.40."""
    assert clocked([0.60, 1.00, 1.40, 1.80]).steady_s(4, elapsed=1.80) == pytest.approx(4 * 0.40)
    assert clocked([0.6]).steady_s(1, elapsed=0.60) == 0.60  # one step: nothing but its own time to go on


def test_the_last_step_of_a_burst_on_a_cpu_is_no_measure_of_a_pass():
    """MLX's CPU backend runs most of a dispatched pass before async_eval returns (measured on the real target:
    0.38 s of a 0.48 s pass), so the first token comes out after 1.8 passes and the last 0.1 s after the one before
    it. Timed from the first to the last, a 4-token burst read 0.35 s a token and a 2-token one 0.2 s."""
    assert clocked([0.86, 1.34, 1.82, 1.92]).steady_s(4, elapsed=1.92) == pytest.approx(4 * 0.48)
    assert clocked([0.86, 0.96]).steady_s(2, elapsed=0.96) == 0.96  # no step between: timed whole


def test_a_few_rounds_below_plain_do_not_outweigh_the_model_well_ahead_of_it_but_many_do():
    """Early-stopping rounds of one or two tokens read anywhere from a plain token's rate to twice it: four of them
    measured below plain decoding are shrunk towards the i.i.d. model (as if it were policy.measured_rounds
    rounds) and speculation stays; thirty such rounds send the controller to plain decoding."""

    def measured_at(rate: float, rounds: int) -> AutoK:
        auto = controller()
        auto.accepted, auto.rejected = 8.6, 1.4  # a summary: the draft model right 86 times in 100
        auto.draft_step_s, auto.plain_s, auto.reach = 0.144, 0.45, 4  # this CPU: plain 2.2 tokens a second
        auto.verify_s, auto.verify_rounds = {1: 0.47, 4: 0.55}, {1: 4, 4: 4}
        seconds = (1 - DEFAULT_POLICY.round_decay**rounds) / (1 - DEFAULT_POLICY.round_decay) * 0.65
        auto.round_count, auto.round_tokens, auto.round_s = rounds, rate * seconds, seconds
        return auto

    few, many = measured_at(1.8, 4), measured_at(1.8, 30)
    modelled = max(few.rate(k) for k in range(1, 5))
    assert few.measured_rate() == pytest.approx(1.8)
    assert 1.8 < few.rate(0) < modelled  # plain 2.2 tokens a second, the model 3.4
    assert few.choose() > 0 and few.rate(0) < few.expected_rate < modelled
    assert many.choose() == 0
