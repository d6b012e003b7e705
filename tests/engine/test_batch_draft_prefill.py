"""A draft-mode Auto K newcomer whose draft-model prefill costs more than its drafts can save decodes plainly."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from specchat.engine import Engine, GenerationConfig
from specchat.engine.autok import AutoK
from specchat.engine.batch.batch_costs import CostTable
from specchat.engine.batch.batch_k import BatchK
from specchat.engine.batch.decoder import BatchDecoder, BatchRequest
from specchat.engine.batch.newcomer_prefill import (
    Peer,
    batch_peers,
    batch_saving_per_token,
    draft_prefill_pays,
    prefill_seconds,
    saving_per_token,
)
from specchat.engine.batch.requests import Newcomer
from specchat.engine.events import PrefillProgress, RoundResult
from specchat.engine.policy import DEFAULT_POLICY
from specchat.engine.prefill_pace import PrefillPace

from .batch_helpers import run_all, solo_tokens
from .helpers import greedy, prompt_ids


def measured(plain_s: float = 0.1, verify_s: float = 0.1, draft_s: float = 0.01) -> AutoK:
    """A solo controller that measured plain decoding, a flat verify pass and a draft step."""
    auto = AutoK(k_max=4)
    auto.plain_s, auto.draft_step_s = plain_s, draft_s
    auto.verify_s = dict.fromkeys(range(1, 5), verify_s)
    auto.verify_rounds = dict.fromkeys(range(1, 5), 20)
    return auto


def pace(tokens: int, seconds: float) -> PrefillPace:
    out = PrefillPace()
    out.add(tokens, seconds)
    return out


def test_the_prefill_is_priced_at_its_measured_seconds_per_token():
    assert prefill_seconds(None, 100) is None and prefill_seconds(PrefillPace(), 100) is None
    assert prefill_seconds(pace(256, 2.56), 2000) == pytest.approx(20.0)


def test_the_saving_per_token_is_plain_cost_less_the_best_rounds_cost():
    auto = measured()
    best = max(auto.rate(k) for k in range(1, 5))
    assert saving_per_token(auto) == pytest.approx(0.1 - 1 / best)
    assert saving_per_token(AutoK()) is None  # nothing measured


def test_a_long_prompt_with_a_short_reply_is_not_read_by_the_draft_model():
    auto, slow = measured(), pace(256, 2.56)  # 10 ms a token
    saving = saving_per_token(auto)
    assert saving is not None and saving > 0
    short, long = int(20.0 / saving) - 1, int(20.0 / saving) + 1  # 2,000 tokens cost 20 s
    assert not draft_prefill_pays(2000, short, slow, auto)
    assert draft_prefill_pays(2000, long, slow, auto)
    assert draft_prefill_pays(50, short, slow, auto)  # a short prompt pays over the same reply


def test_unmeasured_or_unpaying_drafts_leave_the_read_to_the_batch_controller():
    slow = pace(256, 256.0)
    assert draft_prefill_pays(2000, 8, None, measured())
    assert draft_prefill_pays(2000, 8, slow, None)
    assert draft_prefill_pays(2000, 8, slow, measured(plain_s=0.01))  # drafting measured slower than plain
    assert draft_prefill_pays(0, 8, slow, measured())  # nothing to read


def batch_costs(rows: int, plain_s: float, verify_slope: float, draft_s: float = 0.01) -> CostTable:
    """A table that measured a batch size's plain round and drafting rounds at K = 1..4 (verify = plain_s +
    verify_slope * K, every row drafting)."""
    table = CostTable(DEFAULT_POLICY)
    for _ in range(3):
        table.observe(rows, 0, plain_s, None, None)
        for k in range(1, 5):
            verify = plain_s + verify_slope * k
            table.observe(rows, k, verify + k * draft_s, verify, rows)
    return table


DRAFTING = Peer("draft", None, 0.8)


def test_the_batch_saving_is_priced_at_the_size_the_row_joins():
    costs = batch_costs(2, plain_s=0.1, verify_slope=0.002)  # a verify pass flat in depth: drafts pay
    costs.sizes.update(batch_costs(8, plain_s=0.4, verify_slope=0.4).sizes)  # each draft costs a plain round
    small = batch_saving_per_token(costs, [DRAFTING], 0.8, top=4)
    big = batch_saving_per_token(costs, [DRAFTING] * 7, 0.8, top=4)
    assert small is not None and small > 0.0
    assert big is not None and big <= 0.0
    # four rows never ran: priced at two, the largest smaller size measured (a bigger batch saves no more)
    assert batch_saving_per_token(costs, [DRAFTING] * 3, 0.8, top=4) == small


def test_a_read_is_priced_as_its_share_of_what_the_unread_waiting_rows_gain_together():
    # eight rows: all drafting at K = 1 make 14 tokens a second against plain decoding's 13.3 (a 5% gain)
    costs = batch_costs(8, plain_s=0.6, verify_slope=0.35, draft_s=0.05)
    cheap_read, reply = pace(40, 0.4), 64  # the draft model reads this prompt in 0.4 s
    sunk = batch_saving_per_token(costs, [DRAFTING] * 7, 0.75, top=4)  # the others already drafting
    waiting = batch_saving_per_token(costs, [replace(DRAFTING, unread=True)] * 7, 0.75, top=4)
    assert sunk is not None and waiting is not None
    assert sunk * reply > 1.5  # this row's read is what lets the batch draft: about 8 * (1 / 13.3 - 1 / 14) a token
    assert 0 < waiting < sunk / 4  # eight reads share the gain of all eight drafting over all plain
    assert draft_prefill_pays(40, reply, cheap_read, None, batch=sunk)
    assert not draft_prefill_pays(40, reply, cheap_read, None, batch=waiting)  # 0.23 s saved against 0.4 s read
    lookup = Peer("lookup", None, 0.75)  # a lookup row drafts without a read: it is no unread row
    mixed = batch_saving_per_token(costs, [replace(DRAFTING, unread=True)] * 3 + [lookup] * 4, 0.75, top=4)
    assert mixed is not None and mixed > waiting


def test_a_size_not_yet_measured_is_priced_at_the_largest_smaller_size_measured():
    losing = batch_costs(4, plain_s=0.4, verify_slope=0.6)  # at four rows plain decoding leads by 40%
    assert batch_saving_per_token(losing, [DRAFTING] * 3, 0.8, top=4) == 0.0  # measured: plain is its best
    assert batch_saving_per_token(losing, [DRAFTING] * 5, 0.8, top=4) == 0.0  # six rows: no more saved
    assert batch_saving_per_token(losing, [DRAFTING], 0.8, top=4) is None  # a bigger batch says nothing of two
    close = batch_costs(4, plain_s=0.4, verify_slope=0.4)  # plain ahead at four rows by 13%: within the margin
    assert batch_saving_per_token(close, [DRAFTING] * 5, 0.8, top=4) == 0.0  # priced at four: nothing saved there
    gaining = batch_costs(2, plain_s=0.1, verify_slope=0.002)
    at_two = batch_saving_per_token(gaining, [DRAFTING], 0.8, top=4)
    assert at_two is not None and at_two > 0
    assert batch_saving_per_token(gaining, [DRAFTING] * 5, 0.8, top=4) == at_two  # six rows save no more than two
    assert batch_saving_per_token(CostTable(DEFAULT_POLICY), [DRAFTING] * 5, 0.8, top=4) is None  # nothing measured


def test_a_size_that_never_drafted_or_never_ran_plain_is_not_priced():
    plain_only, drafting_only = CostTable(DEFAULT_POLICY), CostTable(DEFAULT_POLICY)
    plain_only.observe(2, 0, 0.1, None, None)
    drafting_only.observe(2, 2, 0.12, 0.1, 2)
    assert batch_saving_per_token(plain_only, [DRAFTING], 0.8, top=4) is None
    assert batch_saving_per_token(drafting_only, [DRAFTING], 0.8, top=4) is None


def test_a_batch_where_drafts_save_nothing_reads_no_draft_prefill_whatever_the_solo_loop_saves():
    auto, cheap = measured(), pace(256, 0.0256)  # the solo loop's saving repays 2,000 tokens at 0.1 ms each
    assert draft_prefill_pays(2000, 64, cheap, auto)
    assert not draft_prefill_pays(2000, 64, cheap, auto, batch=0.0)
    assert not draft_prefill_pays(2000, 64, cheap, auto, batch=-0.05)
    assert draft_prefill_pays(2000, 64, cheap, None, batch=0.01)  # 0.64 s saved against 0.2 s read


@pytest.fixture(scope="module")
def engine(dense_target, dense_draft_partial):
    return Engine.load(dense_target, dense_draft_partial)


@pytest.mark.parametrize("seconds_per_token,reads", [(1.0, False), (1e-6, True)])
def test_a_row_the_draft_model_does_not_read_decodes_plainly_with_its_solo_output(engine, seconds_per_token, reads):
    cfg = replace(greedy("draft", 3, n=12), num_draft_tokens="auto")
    prompts = [prompt_ids(engine, t) for t in ("def fib(n):", "Once upon a time")]
    solo = [solo_tokens(engine, p, cfg) for p in prompts]
    engine.reset()
    engine.auto_k["draft"] = measured()  # saves a few ms a token: 12 tokens repay a read at 1 us, not at 1 s
    runner = engine.draft_runner
    assert runner is not None
    runner.pace.samples.clear()
    runner.pace.add(100, 100 * seconds_per_token)
    engine.batch_carry.controller = BatchK()  # no batch size priced: the solo loop's saving decides
    decoder = BatchDecoder(engine, max_batch=2)
    decoder.solo_lead = False
    decoder.controller.choose = lambda rates, top=None, hopeful=None: 2  # a row the draft model read drafts
    got = run_all(decoder, {0: [(p, cfg) for p in prompts]})[0]
    assert [g.tokens for g in got] == solo
    for g in got:
        draft_reads = [e for e in g.events if isinstance(e, PrefillProgress) and e.model == "draft"]
        drafted = sum(e.drafted for e in g.events if isinstance(e, RoundResult))
        assert bool(draft_reads) == reads and (drafted > 0) == reads, (draft_reads, drafted)


def test_rows_joining_a_batch_whose_drafts_do_not_pay_skip_the_draft_prefill_and_keep_their_output(engine):
    cfg = replace(greedy("draft", 3, n=12), num_draft_tokens="auto")
    prompts = [prompt_ids(engine, t) for t in ("def fib(n):", "Once upon a time")]
    solo = [solo_tokens(engine, p, cfg) for p in prompts]
    engine.reset()
    engine.auto_k["draft"] = measured()  # alone, the drafts repay a read at 1 us a token
    runner = engine.draft_runner
    assert runner is not None
    runner.pace.samples.clear()
    runner.pace.add(100, 100e-6)
    controller = engine.batch_carry.controller = BatchK()
    controller.costs = batch_costs(2, plain_s=0.1, verify_slope=0.5)  # two rows: a draft costs 5 plain rounds
    decoder = BatchDecoder(engine, max_batch=2)
    decoder.solo_lead = False
    got = run_all(decoder, {0: [(p, cfg) for p in prompts]})[0]
    assert [g.tokens for g in got] == solo
    for g in got:
        assert not [e for e in g.events if isinstance(e, PrefillProgress) and e.model == "draft"]
        assert not [e for e in g.events if isinstance(e, RoundResult)]  # plain rows report no rounds


def test_in_lockstep_the_draft_model_reads_every_draft_row_whatever_the_prices(engine):
    """A cluster's ranks price with their own clocks: in lockstep the read is never skipped."""
    cfg = replace(greedy("draft", 3, n=12), num_draft_tokens="auto")
    prompts = [prompt_ids(engine, t) for t in ("def fib(n):", "Once upon a time")]
    engine.reset()
    engine.auto_k["draft"] = measured()
    controller = engine.batch_carry.controller = BatchK()
    controller.costs = batch_costs(2, plain_s=0.1, verify_slope=0.5)  # unlocked, these rows would not read
    decoder = BatchDecoder(engine, max_batch=2)
    decoder.solo_lead, decoder.lockstep = False, True
    got = run_all(decoder, {0: [(p, cfg) for p in prompts]})[0]
    for g in got:
        assert [e for e in g.events if isinstance(e, PrefillProgress) and e.model == "draft"]


def test_only_waiting_draft_rows_the_draft_model_has_not_read_count_as_unread():
    def waiting(mode: str, draft_unread: int) -> Newcomer:
        cfg = GenerationConfig(mode, "auto", 8, 0.0)
        return Newcomer(
            BatchRequest([1, 2, 3], cfg, threading.Event(), print), 8, None, None, draft_unread=draft_unread
        )

    newcomers = [waiting("draft", 40), waiting("draft", 0), waiting("lookup", 40)]  # the second: a moved lead
    peers = batch_peers([], newcomers, lambda mode: 0.7)
    assert [p.unread for p in peers] == [True, False, False]
    assert [p.mode for p in peers] == ["draft", "draft", "lookup"] and {p.rate for p in peers} == {0.7}
