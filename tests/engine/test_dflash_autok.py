"""Auto K with a block drafter: one DFlash pass drafts any K, so a round's draft cost is flat in K; the block is
drafted long where it is accepted, cut per position where the drafter is unsure, and left for plain decoding
where it does not pay. Costs are injected (BlockCostedAutoK), never read from this machine's clock."""

from __future__ import annotations

from dataclasses import dataclass

import mlx.core as mx
import numpy as np
import pytest

from specchat.engine import Engine, RoundResult
from specchat.engine.autok import AutoK
from specchat.engine.drafters import DraftModelDrafter
from tests.fixtures.dflash_models import build_dflash

from .costed_autok import CostedAutoK
from .helpers import greedy, prompt_ids
from .test_dflash import Oracle, rounds_of

PASS_S = 0.3  # one drafter pass, whatever K: half a verify pass (CostedAutoK's verify_base is 0.60)


@dataclass
class BlockCostedAutoK(CostedAutoK):
    """CostedAutoK for a block drafter: a drafting round costs one pass of PASS_S seconds, whatever K."""

    one_pass_draft: bool = True

    def observe(self, k, accepted, draft_s, verify_s, catch_up=0, confidences=None, steps=None, verified=None):  # noqa: ANN001
        self.measured.append("round")
        verify = self.verify_base + self.verify_per_k * (verified or k)
        AutoK.observe(self, k, accepted, PASS_S if k else 0.0, verify, catch_up, confidences, steps, verified)


class BlockOracle(Oracle):
    """Replaces the drafter's projection to the vocabulary: the first `sure` rows of a block surely draft the
    target's own greedy token at their position (the reply's continuation in `full`), the rows after them
    barely (a near-uniform row) draft another; with `wrong`, every row surely drafts a token the target never
    picks there."""

    def __init__(self, monkeypatch, engine: Engine, full: list[int], sure: int = 15, wrong: bool = False):
        super().__init__(monkeypatch, engine, full)
        self.sure, self.always_wrong = sure, wrong

    def logits(self, model, hidden: mx.array) -> mx.array:
        rows = np.zeros((hidden.shape[0], self.vocab), dtype=np.float32)
        for i in range(hidden.shape[0]):
            position = len(self.seq) + i
            right = self.full[position] if position < len(self.full) else 0
            sure = i < self.sure
            token = (right + 1) % self.vocab if self.always_wrong or not sure else right
            if sure:
                rows[i] = -30.0
                rows[i, token] = 30.0
            else:
                rows[i, token] = 0.01  # about 1 / vocab of the probability
        return mx.array(rows)


@pytest.fixture(scope="module")
def engine(dense_target, tmp_path_factory):
    folder = tmp_path_factory.mktemp("dflash_autok") / "dflash"
    return Engine.load(dense_target, dflash=build_dflash(folder, dense_target))


def auto_run(engine: Engine, ids: list[int], n: int, **costs) -> tuple[list[int], list[RoundResult], AutoK]:
    """A greedy DFlash reply under Auto K with the block costs injected."""
    controller = engine.auto_k["dflash"] = BlockCostedAutoK(k_max=15, **costs)
    events = list(engine.stream(ids, greedy("dflash", "auto", n=n)))
    return list(events[-1].tokens), rounds_of(events), controller


# --- the mechanism ---


def test_dflash_declares_one_pass_drafts_and_the_controller_reads_it(engine, dense_target, dense_draft_partial):
    auto = AutoK()
    auto.for_drafter(engine.drafters["dflash"])
    assert auto.one_pass_draft and engine.drafters["dflash"].one_pass_draft
    pair = Engine.load(dense_target, dense_draft_partial)
    assert isinstance(pair.drafters["draft"], DraftModelDrafter)
    auto.for_drafter(pair.drafters["draft"])
    assert not auto.one_pass_draft
    auto.for_drafter(pair.drafters["auto"])  # Auto bills a step per token: its lookup rounds take no pass at all
    assert not auto.one_pass_draft


def measured(one_pass: bool, alpha: float, early_stop: bool = False) -> AutoK:
    """A controller that measured PASS_S of drafting for 8 tokens (8 steps) and verify 0.6 + 0.015 K at K = 2, 8."""
    auto = AutoK(k_max=15, one_pass_draft=one_pass, early_stop=early_stop)
    auto.observe(8, 8, PASS_S, 0.6 + 0.015 * 8, steps=8)
    auto.observe(2, 2, PASS_S, 0.6 + 0.015 * 2, steps=2)
    auto.accepted, auto.rejected = alpha * 30, (1 - alpha) * 30
    auto.plain_s = 0.552
    auto.reach = 15
    return auto


def test_a_block_round_is_billed_one_pass_whatever_k():
    block, steps = measured(True, 0.8), measured(False, 0.8)
    assert block.draft_step_s == pytest.approx(PASS_S)  # the whole pass, not per drafted token
    assert [block.draft_seconds(k) for k in (0, 1, 8, 15)] == [0.0, PASS_S, PASS_S, PASS_S]
    assert steps.draft_step_s == pytest.approx(0.9 * PASS_S / 8 + 0.1 * PASS_S / 2)  # per step, decayed
    assert steps.draft_seconds(15) == pytest.approx(15 * steps.draft_step_s)


def test_high_acceptance_drafts_long_blocks_low_acceptance_decodes_plainly():
    assert measured(True, 0.9).choose() == 15  # a longer block costs only its verify positions
    assert measured(True, 0.6).choose() in range(2, 8)  # shorter where the tail of the block is rarely kept
    assert measured(True, 0.05).choose() == 0  # one pass a round does not pay: plain decoding


def test_a_block_is_cut_by_each_rows_own_chance_not_by_the_next_step_cost():
    block, steps = measured(True, 0.9, early_stop=True), measured(False, 0.9, early_stop=True)
    for auto in (block, steps):
        auto.choose()
    assert block.stop_costs().go_on_at == 0.0 and block.stop_costs().keep_at > 0
    assert steps.stop_costs().go_on_at > steps.stop_costs().keep_at
    plan = block.plan()
    assert plan.k == 15 and plan.costs is not None


# --- the engine, with the costs injected ---


def test_accepted_blocks_are_drafted_whole_and_output_is_plain_decodings(monkeypatch, engine):
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=60)).tokens
    BlockOracle(monkeypatch, engine, ids + baseline)
    tokens, rounds, controller = auto_run(engine, ids, 60)
    assert tokens == baseline
    # the first round measures the costs at policy.start_k; then whole blocks, the last one cut to the budget
    assert [r.drafted for r in rounds] == [2, 15, 15, 15, 9]
    assert [r.accepted for r in rounds] == [2, 15, 15, 15, 9]
    assert controller.draft_step_s == pytest.approx(PASS_S) and "plain" not in controller.measured


def test_unsure_rows_end_the_block_where_they_start(monkeypatch, engine):
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=40)).tokens
    BlockOracle(monkeypatch, engine, ids + baseline, sure=4)
    tokens, rounds, _ = auto_run(engine, ids, 40)
    assert tokens == baseline
    # the first round measures the costs at policy.start_k; the second drafts the whole block (one K measured:
    # the verify pass looks flat in K, so no position costs anything) and learns that unsure rows are refused
    assert [(r.drafted, r.accepted) for r in rounds[:2]] == [(2, 2), (15, 4)]
    later = rounds[2:-1]  # before the last (cut to the budget)
    assert later and all(r.drafted == 4 and r.accepted == 4 and r.stopped_early for r in later)
    assert all(r.stop_confidence is not None and r.stop_confidence < 0.01 for r in later)


def test_a_block_that_is_never_accepted_falls_back_to_plain_decoding(monkeypatch, engine):
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=64)).tokens
    BlockOracle(monkeypatch, engine, ids + baseline, wrong=True)
    tokens, rounds, controller = auto_run(engine, ids, 64)
    assert tokens == baseline
    plain = sum(r.emitted for r in rounds if r.num_draft_tokens == 0)
    assert plain >= 48, [(r.num_draft_tokens, r.drafted, r.emitted) for r in rounds]
    assert all(r.accepted == 0 for r in rounds)
    assert "plain" in controller.measured


def test_a_random_drafter_under_auto_k_gives_plain_greedy_output(engine):
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=48)).tokens
    tokens, rounds, _ = auto_run(engine, ids, 48)
    assert tokens == baseline and rounds
