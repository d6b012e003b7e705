"""Auto amid plain decoding: where Auto K has turned the model drafter off, a copy from the conversation (lookup's
match, no model pass) is still verified when it is expected to beat a plain token. Output stays plain decoding's,
the burst it ends throws no pass away, and the model drafter's acceptance is not learned from the copies."""

import threading
from dataclasses import replace

import pytest

from specchat.engine import Engine, GenerationConfig, RoundResult
from specchat.engine.auto_drafter import AutoDrafter, SourceRecord
from specchat.engine.autok import AutoK
from specchat.engine.pass_costs import Acceptance
from specchat.engine.plain import baseline_steps
from specchat.engine.round import LoopContext
from specchat.engine.sampling import Sampler

from .costed_autok import CostedAutoK

REPEATING = "one two three four five six seven eight nine ten " * 6
CFG = GenerationConfig(mode="auto", num_draft_tokens="auto", max_tokens=64)


@pytest.fixture(scope="module")
def engine(dense_target, dense_draft_unrelated):
    """A draft model that agrees with nothing: Auto K decodes plainly after its first rounds."""
    return Engine.load(dense_target, dense_draft_unrelated)


def auto_run(engine: Engine, ids: list[int], lookup: SourceRecord) -> tuple[CostedAutoK, list[RoundResult], list[int]]:
    """Two Auto replies (the second from what the first learned), lookup's records (pooled and per tail) set to
    the given one at the start of each."""
    controller = engine.auto_k[CFG.mode] = CostedAutoK(k_max=CFG.max_draft_tokens)
    for _ in range(2):
        controller.measured.clear()  # what the last reply measured
        records = engine.drafters["auto"].records
        records.update({name: replace(lookup) for name in records if name.startswith("lookup")})
        events = list(engine.stream(ids, CFG))
    return controller, [e for e in events if isinstance(e, RoundResult)], list(events[-1].tokens)


def test_amid_plain_decoding_a_copy_that_has_held_is_verified(engine):
    ids = list(engine.tokenizer.encode(REPEATING))
    plain = engine.generate(ids, GenerationConfig(max_tokens=64)).tokens
    controller, rounds, tokens = auto_run(engine, ids, SourceRecord(9.0, 10.0))
    assert tokens == plain
    copies = [r for r in rounds if r.drafter == "lookup" and r.num_draft_tokens]
    assert len(copies) >= 3 and "costless" in controller.measured
    assert any(r.num_draft_tokens == 0 for r in rounds)  # Auto K did turn the draft model off
    # copies that never held, on much evidence (a policy that lets it outweigh a reply's own copies)
    auto = engine.drafters["auto"]
    assert isinstance(auto, AutoDrafter)
    kept, auto.policy = auto.policy, replace(auto.policy, reply_evidence=1e6)
    try:
        ignored, _, tokens = auto_run(engine, ids, SourceRecord(0.0, 1e6))
    finally:
        auto.policy = kept
    assert tokens == plain and "costless" not in ignored.measured
    # the draft model's acceptance and draft cost are its own: Auto K measured only the verify pass of a copy
    assert controller.measured.count("costless") == len(copies)
    assert controller.measured.count("round") == sum(1 for r in rounds if r.num_draft_tokens and r.drafter == "draft")


def test_the_depth_verified_is_the_one_with_most_tokens_per_second():
    controller = AutoK(k_max=16)
    controller.observe(2, 0, 0.2, 0.60, catch_up=1)
    controller.observe(8, 0, 1.6, 0.84, catch_up=1)  # verify passes: 0.52 + 0.04 K seconds
    assert controller.costless_k(6, Acceptance.iid(0.9)) == 0  # plain decoding not measured yet: no copy is weighed
    controller.observe_plain(4, 4 * 0.55)  # 1.82 tokens/s
    assert controller.costless_k(6, Acceptance.iid(0.9)) == 6  # 5.2 tokens for 0.76 s: 6.9 tokens/s
    assert controller.costless_k(16, Acceptance.iid(0.5)) == 3  # 2.93 tokens/s; 2.92 at K=2, 2.85 at K=4, 1.72 at K=16
    assert controller.costless_k(6, Acceptance.iid(0.1)) == 1  # 1.96 tokens/s: one token of the copy beats a plain one
    assert controller.costless_k(6, Acceptance.iid(0.0)) == 0  # one token for a pass dearer than a plain step
    assert controller.costless_k(0, Acceptance.iid(0.9)) == 0


def test_a_copy_does_not_teach_the_controller_the_model_drafters_acceptance():
    controller = AutoK(k_max=16)
    controller.observe(2, 0, 0.2, 0.60, catch_up=1)
    controller.observe_plain(4, 4 * 0.55)
    alpha, draft_step, before = controller.alpha, controller.draft_step_s, controller.plain_since_probe
    controller.observe_costless(5, 4, 0.70)
    assert controller.alpha == alpha and controller.draft_step_s == draft_step
    assert controller.verify_rounds[5] == 1 and controller.verify_s[5] == pytest.approx(0.70)
    assert controller.plain_since_probe == before + 5  # its tokens bring the next probe nearer


def test_a_burst_told_to_end_ends_with_the_step_in_flight(engine):
    prompt = list(engine.tokenizer.encode(REPEATING))
    plain = engine.generate(prompt, GenerationConfig(max_tokens=12)).tokens
    runner = engine.runner
    runner.reset()
    passes = []
    forward = runner.forward
    runner.forward = lambda feed: passes.append(len(feed)) or forward(feed)  # type: ignore[method-assign]
    try:
        ctx = LoopContext(list(prompt), Sampler(GenerationConfig()), 12, frozenset(), threading.Event())
        steps = list(baseline_steps(runner, ctx, until=lambda: len(ctx.seq) >= len(prompt) + 3))
        assert [t for s in steps for t in s.tokens] == plain[:4]  # told after the third: the fourth was in flight
        assert len(passes) == 4  # and no fifth pass was started
        rest = list(baseline_steps(runner, LoopContext(ctx.seq, ctx.sampler, 8, frozenset(), ctx.cancel)))
        assert [t for s in rest for t in s.tokens] == plain[4:]  # the caches hold exactly what was emitted
    finally:
        del runner.forward
        runner.reset()
