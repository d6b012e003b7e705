"""The batch's cost table: verify passes per (rows, K), draft steps per drafting rows, each with a 95% interval,
kept in the engine's knowledge, and a controller that explores little."""

import json
import math
import random

import pytest

from specchat.engine import Engine
from specchat.engine.batch.batch_choice import BatchShape
from specchat.engine.batch.batch_costs import Cell, CostRow, CostTable
from specchat.engine.batch.batch_k import BatchK
from specchat.engine.batch.decoder import BatchDecoder
from specchat.engine.knowledge import VERSION, batch_knowledge, learn_batch
from specchat.engine.pass_costs import expected_tokens
from specchat.engine.policy import DEFAULT_POLICY


def cpu_verify(rows: int, k: int) -> float:
    """A CPU-like verify pass: every verified position adds a quarter of a plain step."""
    return 0.05 * rows * (1 + 0.25 * k)


def cpu_step(drafters: int) -> float:
    """A CPU-like draft step: each drafting row's share is its own."""
    return 0.012 * drafters


def simulate(controller: BatchK, alphas, alone: bool, rounds: int, seed: int = 0, verify=cpu_verify, step=cpu_step):
    """Rounds as the decoder runs them (its K, its drafting rows, costs timed apart) for rows accepting drafts with
    these chances. Returns (expected tokens, seconds, the plans)."""
    rng, n = random.Random(seed), len(alphas)
    shape = BatchShape(n, (alone,) * n, 0 if alone else n)
    rows = [controller.new_row() for _ in alphas]
    controller._stop = lambda rates, k: None  # the early stop needs real drafts: it is batch_stop's to test
    tokens = seconds = 0.0
    plans = []
    for _ in range(rounds):
        plan = controller.plan_rows([r.rate for r in rows], 6, [r.hopeful for r in rows], shape)
        ran = 0 if plan.k == 0 else (sum(plan.drafting) if alone else n)
        verify_s = verify(n, plan.k)
        took = verify_s + plan.k * step(ran)
        controller.observe(n, plan.k, took, verify_s, ran)
        for row, alpha, drafting in zip(rows, alphas, plan.drafting):
            k = plan.k if drafting else 0
            controller.observe_row(row, k, next((i for i in range(k) if rng.random() >= alpha), k))
            tokens += expected_tokens(alpha, k)
        seconds += took
        plans.append(plan)
    return tokens, seconds, plans


def best_fixed(alphas, alone: bool, verify=cpu_verify, step=cpu_step) -> float:
    """Tokens per second of the best fixed choice in hindsight: a K and the first m rows by acceptance."""
    n, best = len(alphas), 0.0
    ranked = sorted(range(n), key=lambda i: -alphas[i])
    for k in range(7):
        for m in range(n + 1) if alone else (n,):
            members = set(ranked[:m]) if k else set()
            ran = (len(members) if alone else n) if k else 0
            tokens = sum(expected_tokens(a, k) if i in members else 1.0 for i, a in enumerate(alphas))
            best = max(best, tokens / (verify(n, k) + k * step(ran)))
    return best


def test_a_cell_gives_its_mean_and_a_95_percent_interval():
    cell = Cell()
    for seconds in (1.0, 2.0, 3.0):
        cell.add(seconds, decay=1.0)
    assert cell.mean == pytest.approx(2.0) and cell.count == pytest.approx(3.0)
    lo, hi = cell.interval()
    assert (lo, hi) == pytest.approx((2.0 - 1.96 / math.sqrt(3), 2.0 + 1.96 / math.sqrt(3)))  # sd 1
    decayed = Cell()
    for seconds in (1.0, 2.0):
        decayed.add(seconds, decay=0.5)
    assert decayed.mean == pytest.approx(2.5 / 1.5) and decayed.count == pytest.approx(1.5**2 / 1.25)
    assert Cell(1.0, 1.0, 0.2, 0.04).interval() == (0.0, math.inf)  # one measurement: no spread known


def test_a_round_is_priced_from_its_verify_pass_and_draft_steps():
    table = CostTable(DEFAULT_POLICY)
    table.observe(2, 0, 0.10, 0.10, 0)
    table.observe(2, 2, 0.19, 0.13, 2)  # verify 0.13, two draft steps for two rows: 0.03 each
    table.observe(2, 4, 0.29, 0.17, 2)
    assert table.cost(2, 2, 2) == pytest.approx(0.13 + 2 * 0.03)
    assert table.cost(2, 3, 2) == pytest.approx(0.15 + 3 * 0.03)  # verify off the line through K = 2 and 4
    assert table.cost(2, 3, 1) == pytest.approx(0.15 + 3 * 0.015)  # one count measured: in proportion to rows
    assert table.cost(2, 0, 0) == pytest.approx(0.10) and table.cost(3, 2, 2) is None
    table.observe(2, 2, 0.16, 0.13, 1)  # one row: 0.015 a step
    assert table.draft_step(3) == pytest.approx(0.045)  # the line through one row and two
    rows = table.table()
    assert CostRow("verify", 2, 4, pytest.approx(0.17), 0.0, math.inf, pytest.approx(1.0)) in rows
    assert [(r.what, r.rows, r.k) for r in rows] == [
        ("round", 2, 0),
        ("round", 2, 2),
        ("round", 2, 4),
        ("verify", 2, 2),
        ("verify", 2, 4),
        ("draft step", 1, 1),
        ("draft step", 2, 1),
    ]


def test_the_controller_prints_its_table_with_intervals():
    controller = BatchK(k_max=6)
    simulate(controller, [0.8, 0.8], alone=True, rounds=60)
    verify = [r for r in controller.table() if r.what == "verify" and r.n > 1.5]
    assert verify and all(r.lo <= r.mean_s <= r.hi for r in verify)
    assert all(r.mean_s == pytest.approx(cpu_verify(2, r.k)) for r in verify)  # noiseless costs read exactly


@pytest.mark.parametrize(
    "alphas,alone",
    [([0.8, 0.8], True), ([0.6, 0.6], False), ([0.3, 0.3], True), ([0.9, 0.9, 0.9, 0.05], True)],
)
def test_exploring_costs_at_most_3_percent_against_the_best_fixed_choice(alphas, alone):
    for seed in range(3):
        tokens, seconds, _ = simulate(BatchK(k_max=6), alphas, alone, rounds=600, seed=seed)
        assert tokens / seconds >= 0.97 * best_fixed(alphas, alone), seed


def saved(controller: BatchK) -> dict:
    """The controller's knowledge as a file holds it."""
    return json.loads(json.dumps({"version": VERSION, "batch": batch_knowledge(controller)}))


def test_what_the_batch_learned_is_written_and_read_back():
    learner = BatchK(k_max=6)
    simulate(learner, [0.85, 0.8], alone=True, rounds=80)
    simulate(learner, [0.85, 0.8, 0.7], alone=True, rounds=40, seed=1)
    data = saved(learner)
    learned = learn_batch(None, data)
    assert learned is not None and saved(learned) == data
    assert learned.table() == learner.table() and learned.last_k == learner.last_k
    assert (learned.pooled.accepted, learned.pooled.checked) == (learner.pooled.accepted, learner.pooled.checked)
    assert [learned.timings[n].gap for n in (2, 3)] == [learner.timings[n].gap for n in (2, 3)]


def test_a_controller_started_from_saved_knowledge_chooses_as_the_one_that_learned_it():
    learner = BatchK(k_max=6)
    simulate(learner, [0.85, 0.85], alone=True, rounds=100)
    learned = learn_batch(None, saved(learner))
    assert learned is not None
    rates, hopeful = [0.85, 0.85], [0.9, 0.9]
    chosen = []
    for _ in range(20):  # the same choices, tries of other Ks included
        k = learned.choose(rates, 6, hopeful)
        assert k == learner.choose(rates, 6, hopeful)
        for controller in (learned, learner):
            controller.observe(2, k, cpu_verify(2, k) + k * cpu_step(2), cpu_verify(2, k), 2 if k else 0)
        chosen.append(k)
    assert 0 not in chosen[:2]  # no plain round to measure plain decoding first
    new = BatchK(k_max=6)
    assert new.choose(rates, 6, hopeful) > 0
    new.observe(2, 2, cpu_verify(2, 2) + 2 * cpu_step(2), cpu_verify(2, 2), 2)
    assert new.choose(rates, 6, hopeful) == 0  # a controller that learned nothing measures plain at a new size


def test_old_files_without_a_batch_part_still_load(dense_target):
    engine = Engine.load(dense_target)
    engine.learn({"version": VERSION, "auto_k": {}, "sources": {}})
    assert engine.batch_carry.controller is None and engine.knowledge()["batch"] == {}
    assert learn_batch(None, {"version": 999, "batch": {"last_k": 3}}) is None  # another version's: ignored
    broken = BatchK()
    assert (
        learn_batch(broken, {"version": VERSION, "batch": {"sizes": {"2": {"rounds": {"0": ["x", 1, 1, 1]}}}}})
        is broken
    )
    assert broken.timings == {}


def test_the_engine_keeps_the_batch_table_and_its_decoder_starts_from_it(dense_target):
    learner = BatchK()
    simulate(learner, [0.8, 0.8], alone=False, rounds=40)
    data = saved(learner)
    engine = Engine.load(dense_target)
    engine.learn(data)
    assert json.loads(json.dumps(engine.knowledge()))["batch"] == data["batch"]
    decoder = BatchDecoder(engine, max_batch=4)
    assert decoder.controller is engine.batch_carry.controller and decoder.controller.table() == learner.table()
    engine.reset()  # the caches go; the pair's measured costs stay, as Auto K's do
    assert engine.batch_carry.controller is decoder.controller and engine.knowledge()["batch"] == data["batch"]
